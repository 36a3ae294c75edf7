-- torch.nn.layers: Linear and the parameter-free layers (activations,
-- Flatten, Dropout, Identity, ...). The containers are in containers.lua.
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
  base.check_device(self, input, { "weight", "bias" })
  local w, b = self.weight, self.bias
  if b ~= nil and input:dim() == 2 then
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
