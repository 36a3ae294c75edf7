-- torch.nn.layers: Linear, the containers (Sequential, ModuleList) and the
-- parameter-free layers (activations, Flatten, Dropout, Identity, ...).
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local check_tensor = require("torch.utils.errors").check_tensor
local base = require("torch.nn.module")
local init = require("torch.nn.initializers")

local Module, Parameter = base.Module, base.Parameter
local py_number, py_bool = base.py_number, base.py_bool

local L = {}

-- Options come as a trailing table; a bare boolean/number is accepted
-- where PyTorch's first keyword would go.
local function opts_of(v) return type(v) == "table" and v or {} end

-- ---------------------------------------------------------------- Linear

-- nn.Linear(in_features, out_features[, {bias = true, device =, dtype =}])
-- y = x W^T + b, W of shape [out, in]. Initialised as PyTorch does:
-- kaiming_uniform_(W, a = sqrt(5)), i.e. W and b ~ U(-1/sqrt(in), 1/sqrt(in)).
local Linear = Module:extend("Linear")
L.Linear = Linear

function Linear:init(in_features, out_features, opts)
  if math.type(in_features) ~= "integer" or math.type(out_features) ~= "integer"
      or in_features < 0 or out_features < 0 then
    fail(string.format("nn.Linear(in_features, out_features): expected two non-negative integers, got %s and %s",
      tostring(in_features), tostring(out_features)))
  end
  local bias = true
  if type(opts) == "boolean" then bias = opts; opts = {} end
  opts = opts_of(opts)
  check_options(opts, "nn.Linear", { "bias", "device", "dtype" })
  if opts.bias ~= nil then bias = opts.bias and true or false end
  local function empty(...)
    if opts.device == nil and opts.dtype == nil then return torch.empty(...) end
    local shape = table.pack(...)
    shape[shape.n + 1] = { device = opts.device, dtype = opts.dtype }
    return torch.empty(table.unpack(shape, 1, shape.n + 1))
  end
  self.in_features = in_features
  self.out_features = out_features
  self.weight = Parameter(empty(out_features, in_features))
  if bias then self.bias = Parameter(empty(out_features)) end
  self:reset_parameters()
end

function Linear:reset_parameters()
  init.kaiming_uniform_(self.weight, { a = math.sqrt(5) })
  if self.bias ~= nil then
    local fan_in = init._calculate_fan_in_and_fan_out(self.weight)
    local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
    init.uniform_(self.bias, -bound, bound)
  end
end

function Linear:forward(input)
  check_tensor(input, "input", "Linear")
  local w, b = self.weight, self.bias
  if b ~= nil and torch.addmm and input:dim() == 2 then
    return torch.addmm(b, input, w:t())
  end
  local out = input:matmul(w:t())
  if b ~= nil then out = out + b end
  return out
end

function Linear:extra_repr()
  return string.format("in_features=%d, out_features=%d, bias=%s", self.in_features, self.out_features,
    py_bool(self.bias ~= nil))
end

-- ------------------------------------------------------------ containers

local function check_index(self, i, n)
  if math.type(i) ~= "integer" then
    fail("index must be an integer, got " .. tostring(i))
  end
  local j = i < 0 and n + 1 + i or i
  if j < 1 or j > n then
    fail(string.format("index %d is out of range for %s of length %d (positions are 1-based)", i,
      self:_get_name(), n))
  end
  return j
end

-- Shared by Sequential and ModuleList: children named "1", "2", ...
local function list_container(name)
  local C = Module:extend(name)
  function C:__len() return self._modules:count() end
  -- net[i]: the i-th child (1-based; negative counts from the end).
  function C:__getitem(i)
    if i == 0 then
      fail(string.format("%s index 0: positions are 1-based in gshell, the first module is [1] " ..
        "(and the last [-1] or [#net])", name))
    end
    local n = self._modules:count()
    local j = i < 0 and n + 1 + i or i
    if math.type(j) ~= "integer" or j < 1 or j > n then return nil end
    return self._modules.vals[self._modules.keys[j]]
  end
  -- net[i] = m replaces the i-th child; net[#net + 1] = m appends.
  function C:__setitem(i, m)
    local n = self._modules:count()
    if i == n + 1 then return self:add(m) end
    local j = check_index(self, i, n)
    if not base.is_module(m) then
      fail(string.format("cannot assign '%s' as child module %d (torch.nn.Module expected)", type(m), i))
    end
    base.check_child(self, self._modules.keys[j], m)
    self._modules.vals[self._modules.keys[j]] = m
  end
  function C:add(m)
    if not base.is_module(m) then
      fail(name .. ":add: expected a module, got " .. type(m))
    end
    self:add_module(tostring(self._modules:count() + 1), m)
    return self
  end
  C.append = C.add
  -- Iterates the children: for i, m in net:ipairs() do (ipairs(net) works too).
  function C:ipairs()
    local i = 0
    return function()
      i = i + 1
      local m = self[i]
      if m ~= nil then return i, m end
    end
  end
  return C
end

-- nn.Sequential(m1, m2, ...): calls its children in order. Children are
-- named 1, 2, ... (state_dict keys "1.weight"); net[1] is the first.
-- nn.Sequential({{"fc", m1}, {"act", m2}}) names them.
local Sequential = list_container("Sequential")
L.Sequential = Sequential

function Sequential:init(...)
  local args = table.pack(...)
  if args.n == 1 and type(args[1]) == "table" and not base.is_module(args[1]) then
    for _, kv in ipairs(args[1]) do
      if type(kv) ~= "table" or type(kv[1]) ~= "string" or not base.is_module(kv[2]) then
        fail("nn.Sequential({{name, module}, ...}): expected {name, module} pairs")
      end
      self:add_module(kv[1], kv[2])
    end
    return
  end
  for i = 1, args.n do
    if not base.is_module(args[i]) then
      fail(string.format("nn.Sequential: argument %d is not a module (got %s)", i, type(args[i])))
    end
    self:add_module(tostring(i), args[i])
  end
end

function Sequential:forward(input)
  for _, m in self._modules:items() do input = m(input) end
  return input
end

-- nn.ModuleList(list): holds modules (registered, moved, saved) without a
-- forward of its own.
local ModuleList = list_container("ModuleList")
L.ModuleList = ModuleList

function ModuleList:init(list)
  if list ~= nil and type(list) ~= "table" then fail("nn.ModuleList: expected a list of modules, got " .. type(list)) end
  for _, m in ipairs(list or {}) do self:add(m) end
end

-- ----------------------------------------------------------- activations

local function simple(name, fn, any_input)
  local C = Module:extend(name)
  C.forward = function(_, x)
    if not any_input then check_tensor(x, "input", name) end
    return fn(x)
  end
  return C
end

L.ReLU = simple("ReLU", function(x) return x:relu() end)
L.Sigmoid = simple("Sigmoid", function(x) return x:sigmoid() end)
L.Tanh = simple("Tanh", function(x) return x:tanh() end)
L.Identity = simple("Identity", function(x) return x end, true) -- as PyTorch's: any value

-- nn.Softmax(dim) / nn.LogSoftmax(dim): dim is 1-based, as everywhere.
for _, kind in ipairs({ "Softmax", "LogSoftmax" }) do
  local C = Module:extend(kind)
  local method = kind == "Softmax" and "softmax" or "log_softmax"
  function C:init(dim)
    if type(dim) == "table" then check_options(dim, "nn." .. kind, { "dim" }); dim = dim.dim end
    self.dim = dim
  end
  function C:forward(x)
    check_tensor(x, "input", kind)
    local d = self.dim
    if d == nil then d = (x:dim() == 0 or x:dim() == 1 or x:dim() == 3) and 1 or 2 end
    return x[method](x, d)
  end
  function C:extra_repr() return "dim=" .. (self.dim == nil and "None" or tostring(self.dim)) end
  L[kind] = C
end

-- --------------------------------------------------------------- Flatten

-- nn.Flatten([start_dim = 2[, end_dim = -1]]) or nn.Flatten({start_dim =,
-- end_dim =}): flattens dims start_dim..end_dim (1-based, so the default
-- keeps the batch dim 1, like PyTorch's Flatten() whose 0-based start_dim is 1).
local Flatten = Module:extend("Flatten")
L.Flatten = Flatten

function Flatten:init(start_dim, end_dim)
  if type(start_dim) == "table" then check_options(start_dim, "nn.Flatten", { "start_dim", "end_dim" }) end
  if type(start_dim) == "table" then start_dim, end_dim = start_dim.start_dim, start_dim.end_dim end
  self.start_dim = start_dim or 2
  self.end_dim = end_dim or -1
  for _, d in ipairs({{"start_dim", self.start_dim}, {"end_dim", self.end_dim}}) do
    if math.type(d[2]) ~= "integer" then fail("nn.Flatten: " .. d[1] .. " must be an integer, got " .. type(d[2])) end
  end
end

function Flatten:forward(x)
  check_tensor(x, "input", "Flatten")
  return x:flatten(self.start_dim, self.end_dim)
end

function Flatten:extra_repr()
  return string.format("start_dim=%d, end_dim=%d", self.start_dim, self.end_dim)
end

-- --------------------------------------------------------------- Dropout

-- nn.Dropout([p = 0.5[, inplace = false]]) or nn.Dropout({p =, inplace =}).
-- In training mode zeroes each element with probability p (a mask drawn
-- with torch.rand_like) and scales the rest by 1/(1-p); in eval mode it
-- returns its input.
local Dropout = Module:extend("Dropout")
L.Dropout = Dropout

function Dropout:init(p, inplace)
  if type(p) == "table" then check_options(p, "nn.Dropout", { "p", "inplace" }); p, inplace = p.p, p.inplace end
  if type(inplace) == "table" then check_options(inplace, "nn.Dropout", { "inplace" }); inplace = inplace.inplace end
  if p == nil then p = 0.5 end
  if type(p) ~= "number" or not (p >= 0 and p <= 1) then -- "not (...)" also refuses nan
    fail("dropout probability has to be between 0 and 1, but got " .. tostring(p))
  end
  self.p = p
  self.inplace = inplace and true or false
end

function Dropout:forward(x)
  check_tensor(x, "input", "Dropout")
  if not self.training or self.p == 0 then return x end
  local p = self.p
  if p == 1 then
    if self.inplace then return x:zero_() end
    return x * 0
  end
  local noise = torch.rand_like(x):ge(p):to(x.dtype):div_(1 - p)
  if self.inplace then return x:mul_(noise) end
  return x * noise
end

function Dropout:extra_repr()
  return string.format("p=%s, inplace=%s", py_number(self.p), py_bool(self.inplace))
end

return L
