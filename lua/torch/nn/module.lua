-- torch.nn.module: nn.Module, the base of every layer and user model.
--
-- A module is a Lua table whose metatable is its class. Assigning a
-- Parameter or a Module to a field registers it, in the order of
-- assignment, as PyTorch's Module.__setattr__ does; everything else is a
-- plain attribute. Registered things live in ordered maps (_parameters,
-- _buffers, _modules) and plain attributes in _attrs, so every assignment
-- goes through __newindex and a field can change kind later.
--
-- The module's neighbours, each in a file of its own: Python's printed
-- forms (pyrepr.lua), the ordered containers (collections.lua),
-- nn.Parameter (parameter.lua), the state dict (state_dict.lua); the
-- container modules Sequential and ModuleList are in containers.lua. This
-- file re-exports them so require("torch.nn.module") keeps its shape.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local options = require("torch.utils.errors").options
local class = require("torch.utils.class")
local pyrepr = require("torch.nn.pyrepr")
local collections = require("torch.nn.collections")
local parameter = require("torch.nn.parameter")
local state = require("torch.nn.state_dict")

local M = {}

M.py_number, M.py_bool, M.py_repr = pyrepr.py_number, pyrepr.py_bool, pyrepr.py_repr
M.OMap, M.OrderedDict, M.named_list = collections.OMap, collections.OrderedDict, collections.named_list
M.Parameter, M.is_parameter = parameter.Parameter, parameter.is_parameter

local OMap, named_list = collections.OMap, collections.named_list
local is_parameter = parameter.is_parameter
local function is_tensor(v) return torch.is_tensor(v) end

-- --------------------------------------------------------------- Module

local Module = {}
M.Module = Module

local function is_module(v)
  if type(v) ~= "table" or rawget(v, "_modules") == nil then return false end
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__is_module == true
end
M.is_module = is_module

local function type_name(v)
  if is_tensor(v) then
    local names = {
      float32 = "torch.FloatTensor", float64 = "torch.DoubleTensor", float16 = "torch.HalfTensor",
      bfloat16 = "torch.BFloat16Tensor", int64 = "torch.LongTensor", int32 = "torch.IntTensor",
      int16 = "torch.ShortTensor", int8 = "torch.CharTensor", uint8 = "torch.ByteTensor", bool = "torch.BoolTensor",
    }
    local n = names[v.dtype.name] or "torch.Tensor"
    if v.is_cuda then n = n:gsub("^torch%.", "torch.cuda.") end
    return n
  end
  if is_module(v) then return v:_get_name() end
  if math.type(v) == "integer" then return "int" end
  if type(v) == "number" then return "float" end
  return type(v)
end

-- True when target is m or a module inside m's tree.
local function contains(m, target, seen)
  if rawequal(m, target) then return true end
  if seen[m] then return false end
  seen[m] = true
  for _, c in m._modules:items() do
    if contains(c, target, seen) then return true end
  end
  return false
end

-- Refuses to make child a child of parent when child contains parent: the
-- tree would contain itself, and state_dict, to(), printing and every
-- other walk would never end.
function M.check_child(parent, name, child)
  if child ~= nil and contains(child, parent, {}) then
    fail(string.format("cannot add child module '%s' to %s: %s", tostring(name), parent:_get_name(),
      rawequal(child, parent) and "a module cannot contain itself"
        or "it already contains this module (a module tree cannot have cycles)"))
  end
end

-- Class objects (torch.utils.class): calling one constructs an instance
-- with its parameter, buffer and child tables, then calls init.
local function construct(cls, ...)
  local self = setmetatable({}, cls)
  rawset(self, "_parameters", OMap.new())
  rawset(self, "_buffers", OMap.new())
  rawset(self, "_non_persistent", {})
  rawset(self, "_modules", OMap.new())
  rawset(self, "_attrs", { training = true })
  self:init(...)
  return self
end

local function make_class(parent, name)
  local cls = class.extend(parent, name, {
    __call = construct,
    __tostring = function() return "<class '" .. name .. "'>" end,
    __name = "nn.Module class",
  })
  cls.__class = cls
  return cls
end

-- local Model = nn.Module:extend("Model"): a new class deriving from this
-- one. Define Model:init(...) (the constructor, called by Model(...)) and
-- Model:forward(...). Any layer can be extended the same way:
-- nn.Linear:extend("MyLinear"), calling nn.Linear.init(self, ...) inside.
function Module:extend(name)
  if type(self) ~= "table" or rawget(self, "_modules") ~= nil then
    fail("extend: call it on a class, as nn.Module:extend(\"Name\")")
  end
  if name ~= nil and type(name) ~= "string" then
    fail("extend: expected a class name (string), got " .. type(name))
  end
  return make_class(self, name or "Module")
end

-- Instance field lookup: parameters, buffers, children, attributes, then
-- the class. Sequential-like classes answer integer keys with __getitem.
function Module.__index(self, k)
  local v = self._parameters.vals[k]
  if v ~= nil then return v end
  v = self._buffers.vals[k]
  if v ~= nil then return v end
  v = self._modules.vals[k]
  if v ~= nil then return v end
  v = self._attrs[k]
  if v ~= nil then return v end
  local cls = getmetatable(self)
  if type(k) == "number" then
    local gi = cls.__getitem
    if gi then return gi(self, k) end
    return nil
  end
  return cls[k]
end

local function unregister(self, k, keep)
  if keep ~= "p" then self._parameters:remove(k) end
  if keep ~= "b" then self._buffers:remove(k); self._non_persistent[k] = nil end
  if keep ~= "m" then self._modules:remove(k) end
  if keep ~= "a" then self._attrs[k] = nil end
end

-- Assignment: a Parameter registers a parameter, a Module a child (in the
-- order of first assignment); a field that holds a parameter/buffer/child
-- only takes the same kind (or nil, which removes it).
function Module.__newindex(self, k, v)
  if type(k) == "number" then
    local si = getmetatable(self).__setitem
    if si then return si(self, k, v) end
    fail("cannot assign to index " .. k .. " of a " .. self:_get_name())
  end
  if type(k) ~= "string" then fail("module attribute names must be strings, got " .. type(k)) end
  if is_parameter(v) then
    unregister(self, k, "p")
    self._parameters:set(k, v)
  elseif is_module(v) then
    M.check_child(self, k, v)
    unregister(self, k, "m")
    self._modules:set(k, v)
  elseif self._parameters:has(k) then
    if v ~= nil then
      fail(string.format("cannot assign '%s' as parameter '%s' (torch.nn.Parameter or nil expected)",
        type_name(v), k))
    end
    self._parameters:remove(k)
  elseif self._modules:has(k) then
    if v ~= nil then
      fail(string.format("cannot assign '%s' as child module '%s' (torch.nn.Module or nil expected)",
        type_name(v), k))
    end
    self._modules:remove(k)
  elseif self._buffers:has(k) then
    if v ~= nil and not is_tensor(v) then
      fail(string.format("cannot assign '%s' as buffer '%s' (torch.Tensor or nil expected)", type_name(v), k))
    end
    self._buffers:set(k, v)
    if v == nil then self._non_persistent[k] = nil end
  else
    self._attrs[k] = v
  end
end

-- A forward that calls its own module again (directly or through others)
-- would recurse without end; as tail calls it would even loop forever.
-- Module calls are counted (a to-be-closed guard undoes the count on
-- return and on error) and refused past this depth.
local MAX_CALL_DEPTH = 200
local call_depth = 0
local depth_guard = setmetatable({}, { __close = function() call_depth = call_depth - 1 end })

function Module.__call(self, ...)
  if call_depth >= MAX_CALL_DEPTH then
    fail(string.format("maximum module call depth (%d) exceeded calling %s: does a forward call its own module "
      .. "(self(x) or a parent) again?", MAX_CALL_DEPTH, self:_get_name()))
  end
  call_depth = call_depth + 1
  local _ <close> = depth_guard
  return self:forward(...)
end

function Module:init() end

function Module:forward()
  fail("Module [" .. self:_get_name() .. "] is missing the required \"forward\" function")
end

function Module:_get_name() return getmetatable(self).__name end

-- m:isinstance(cls): whether m is an instance of cls or of a class derived
-- from it (Python's isinstance(m, cls)), e.g. m:isinstance(nn.Conv2d).
function Module:isinstance(cls)
  if type(cls) ~= "table" or rawget(cls, "__class") ~= cls then
    fail("isinstance: expected a module class such as nn.Conv2d, got " .. type_name(cls))
  end
  local c = getmetatable(self)
  while c ~= nil do
    if rawequal(c, cls) then return true end
    c = rawget(c, "super")
  end
  return false
end

local function devstr(d) return d.type == "cpu" and "cpu" or (d.type .. ":" .. tostring(d.index)) end

-- Refuses an input on another device than the module's own tensors,
-- naming the first one that differs (a parameter or a buffer) and both
-- devices: "BatchNorm2d: running_mean is on cpu but the input is on
-- cuda:0". `names` lists the fields to check; nil fields are skipped.
-- A helper for the layers' forward (not a method: users never call it).
function M.check_device(self, input, names)
  local dev = input.device
  for _, name in ipairs(names) do
    local t = self._parameters.vals[name] or self._buffers.vals[name]
    if t ~= nil and t.device ~= dev then
      -- PyTorch's words for the mismatch follow, which scripts may look for
      fail(string.format("%s: %s is on %s but the input is on %s (Expected all tensors to be on the same device: "
        .. "move the module with net:to(\"%s\") or the input with x:to(\"%s\"))", self:_get_name(), name,
        devstr(t.device), devstr(dev), devstr(dev), devstr(t.device)))
    end
  end
end

-- One line (or several, separated by \n) shown inside the parentheses.
function Module:extra_repr() return "" end

local function add_indent(s, n)
  local lines = {}
  for line in (s .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  if #lines == 1 then return s end
  local pad = string.rep(" ", n)
  for i = 2, #lines do lines[i] = pad .. lines[i] end
  return table.concat(lines, "\n")
end

-- PyTorch's Module.__repr__, character for character.
function Module.__tostring(self)
  local extra_lines = {}
  local extra = self:extra_repr()
  if extra and extra ~= "" then
    for line in (extra .. "\n"):gmatch("(.-)\n") do extra_lines[#extra_lines + 1] = line end
  end
  local child_lines = {}
  for key, m in self._modules:items() do
    child_lines[#child_lines + 1] = "(" .. tostring(key) .. "): " .. add_indent(tostring(m), 2)
  end
  local lines = {}
  for _, l in ipairs(extra_lines) do lines[#lines + 1] = l end
  for _, l in ipairs(child_lines) do lines[#lines + 1] = l end
  local s = self:_get_name() .. "("
  if #lines > 0 then
    if #extra_lines == 1 and #child_lines == 0 then
      s = s .. extra_lines[1]
    else
      s = s .. "\n  " .. table.concat(lines, "\n  ") .. "\n"
    end
  end
  return s .. ")"
end

-- ---------------------------------------------------------- registration

function Module:register_parameter(name, p)
  if type(name) ~= "string" or name == "" or name:find("%.") then
    fail("parameter name must be a non-empty string without '.', got " .. tostring(name))
  end
  if p ~= nil and not is_parameter(p) then
    fail(string.format("cannot assign '%s' object to parameter '%s' (torch.nn.Parameter or nil required)",
      type_name(p), name))
  end
  unregister(self, name, "p")
  self._parameters:set(name, p)
end

-- A tensor that is part of the module's state (state_dict, to()) but not
-- a parameter. persistent = false keeps it out of state_dict.
function Module:register_buffer(name, t, persistent)
  if type(name) ~= "string" or name == "" or name:find("%.") then
    fail("buffer name must be a non-empty string without '.', got " .. tostring(name))
  end
  if t ~= nil and not is_tensor(t) then
    fail(string.format("cannot assign '%s' object to buffer '%s' (torch Tensor or nil required)", type_name(t), name))
  end
  unregister(self, name, "b")
  self._buffers:set(name, t)
  self._non_persistent[name] = (persistent == false) or nil
end

function Module:add_module(name, m)
  if m ~= nil and not is_module(m) then
    fail(type_name(m) .. " is not a Module subclass")
  end
  name = tostring(name)
  M.check_child(self, name, m)
  unregister(self, name, "m")
  self._modules:set(name, m)
end
Module.register_module = Module.add_module

-- ------------------------------------------------------------ traversal

-- Every module in the tree, pre-order, each once: {name, module} pairs.
local function collect_modules(self, prefix, memo, out)
  if memo[self] then return out end
  memo[self] = true
  out[#out + 1] = { prefix, self }
  for name, m in self._modules:items() do
    collect_modules(m, prefix == "" and name or (prefix .. "." .. name), memo, out)
  end
  return out
end

function Module:named_modules(prefix)
  if prefix ~= nil and type(prefix) ~= "string" then fail("named_modules: prefix must be a string, got " .. type(prefix)) end
  return named_list(collect_modules(self, prefix or "", {}, {}))
end

function Module:modules()
  local r = {}
  for _, kv in ipairs(collect_modules(self, "", {}, {})) do r[#r + 1] = kv[2] end
  return r
end

function Module:named_children()
  local r, memo = {}, {}
  for name, m in self._modules:items() do
    if not memo[m] then memo[m] = true; r[#r + 1] = { name, m } end
  end
  return named_list(r)
end

function Module:children()
  local r = {}
  for _, kv in ipairs(self:named_children()) do r[#r + 1] = kv[2] end
  return r
end

-- Parameters (or buffers) of every module, PyTorch's order: each module's
-- own (in registration order) before its children's, each tensor once.
local function named_members(self, field, recurse, prefix)
  if prefix ~= nil and type(prefix) ~= "string" then
    fail(field:sub(2) .. ": prefix must be a string, got " .. type(prefix))
  end
  local r, memo = {}, {}
  local mods = recurse == false and { { prefix or "", self } } or collect_modules(self, prefix or "", {}, {})
  for _, kv in ipairs(mods) do
    local mprefix, m = kv[1], kv[2]
    for name, t in m[field]:items() do
      if not memo[t] then
        memo[t] = true
        r[#r + 1] = { mprefix == "" and name or (mprefix .. "." .. name), t }
      end
    end
  end
  return r
end

-- net:named_parameters(): a list of {name, parameter} pairs in PyTorch's
-- order, also usable directly in a generic for:
--   for name, p in net:named_parameters() do print(name, p:size()) end
function Module:named_parameters(opts)
  opts = options(opts, "named_parameters")
  check_options(opts, "named_parameters", { "prefix", "recurse" })
  return named_list(named_members(self, "_parameters", opts.recurse, opts.prefix))
end

-- net:parameters(): a Lua list of the parameter tensors.
function Module:parameters(recurse)
  local r = {}
  for _, kv in ipairs(named_members(self, "_parameters", recurse)) do r[#r + 1] = kv[2] end
  return r
end

function Module:named_buffers(opts)
  opts = options(opts, "named_buffers")
  check_options(opts, "named_buffers", { "prefix", "recurse" })
  return named_list(named_members(self, "_buffers", opts.recurse, opts.prefix))
end

function Module:buffers(recurse)
  local r = {}
  for _, kv in ipairs(named_members(self, "_buffers", recurse)) do r[#r + 1] = kv[2] end
  return r
end

-- fn(module) on every child (recursively) then on self; returns self.
function Module:apply(fn)
  if type(fn) ~= "function" then fail("apply: expected a function of a module, got " .. type(fn)) end
  for _, m in ipairs(self:children()) do m:apply(fn) end
  fn(self)
  return self
end

-- ----------------------------------------------------------------- modes

function Module:train(mode)
  if mode == nil then mode = true end
  if type(mode) ~= "boolean" then fail("training mode is expected to be boolean") end
  self._attrs.training = mode
  for _, m in ipairs(self:children()) do m:train(mode) end
  return self
end

function Module:eval() return self:train(false) end

function Module:requires_grad_(on)
  if on == nil then on = true end
  for _, p in ipairs(self:parameters()) do p.requires_grad = on end
  return self
end

-- Forgets the gradients (sets .grad to nil, PyTorch 2's default), or
-- zeroes them in place with {set_to_none = false}.
function Module:zero_grad(opts)
  check_options(opts, "zero_grad", { "set_to_none" })
  local set_to_none = not (type(opts) == "table" and opts.set_to_none == false) and opts ~= false
  for _, p in ipairs(self:parameters()) do
    local g = p.grad
    if g ~= nil then
      if set_to_none then p.grad = nil else g:zero_() end
    end
  end
end

-- ------------------------------------------------------------- movement

-- Applies fn to every parameter, its gradient and every buffer, in place:
-- the tensor objects stay the same (x.data = new swaps the storage), so
-- optimizers holding them keep working.
function Module:_apply(fn)
  if type(fn) ~= "function" then fail("_apply: expected a function of a tensor, got " .. type(fn)) end
  for _, m in ipairs(self:modules()) do
    for _, p in m._parameters:items() do
      local d = p.data
      local new = fn(d)
      if not rawequal(new, d) then p.data = new end
      local g = p.grad
      if g ~= nil then
        local ng = fn(g)
        if not rawequal(ng, g) then g.data = ng end
      end
    end
    for _, b in m._buffers:items() do
      local new = fn(b)
      if not rawequal(new, b) then b.data = new end
    end
  end
  return self
end

local function mt_name(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__name or nil
end

-- to(device), to(dtype), to(device, dtype), to({device =, dtype =}).
-- A dtype converts only floating-point tensors, as in PyTorch.
function Module:to(a, b)
  local device, dtype
  local function take(v)
    if v == nil then return end
    local n = mt_name(v)
    if n == "torch.dtype" then dtype = v
    elseif n == "torch.device" or type(v) == "string" or math.type(v) == "integer" then device = v
    elseif type(v) == "table" then
      check_options(v, "to", { "device", "dtype", "non_blocking" })
      if v.device ~= nil then device = v.device end
      if v.dtype ~= nil then dtype = v.dtype end
    else
      fail("Module:to: expected a device, a dtype or {device =, dtype =}, got " .. type(v))
    end
  end
  take(a); take(b)
  if device ~= nil then device = torch.device(device) end
  if dtype ~= nil and mt_name(dtype) ~= "torch.dtype" then
    fail("Module:to: dtype must be a torch.dtype such as torch.float64, got " .. type(dtype))
  end
  if dtype ~= nil and not dtype.is_floating_point then
    fail("nn.Module.to only accepts floating point dtypes, but got desired dtype=" .. tostring(dtype))
  end
  return self:_apply(function(t)
    local want = (dtype ~= nil and t:is_floating_point()) and dtype or nil
    if device ~= nil and want ~= nil then return t:to(device, want) end
    if device ~= nil then return t:to(device) end
    if want ~= nil then return t:to(want) end
    return t
  end)
end

function Module:cuda(i)
  local dev = i == nil and torch.device("cuda", torch.cuda.current_device()) or torch.device("cuda", i)
  return self:to(dev)
end
function Module:cpu() return self:to(torch.device("cpu")) end
local function cast(dtype_name)
  return function(self)
    local dt = torch[dtype_name]
    return self:_apply(function(t) return t:is_floating_point() and t:to(dt) or t end)
  end
end
Module.double = cast("float64")
Module.float = cast("float32")
Module.half = cast("float16")
Module.bfloat16 = cast("bfloat16")

-- ----------------------------------------------------------- state dict

-- state_dict([{prefix =, keep_vars =}]) and load_state_dict(sd[, {strict =}]):
-- see state_dict.lua.
Module.state_dict = state.state_dict
Module.load_state_dict = state.load_state_dict

-- A module method called with a dot (`net.parameters()`, `net.to(dev)`)
-- gets no module as self: say so, naming the colon form, in the error
-- itself so the fix survives pcall and nested calls (as tensor methods
-- do in src/bind). `extend` is called on classes; metamethods by Lua.
for k, f in pairs(Module) do
  -- (state_dict and load_state_dict stay state_dict.lua's own functions)
  if type(f) == "function" and k:sub(1, 2) ~= "__" and k ~= "extend" and k ~= "state_dict" and k ~= "load_state_dict" then
    Module[k] = function(self, ...)
      if type(self) ~= "table" or rawget(self, "_modules") == nil then
        fail(string.format("%s: expected a module before the colon, got %s; a method needs its module before "
          .. "a colon: write `net:%s(...)`, not `net.%s(...)`", k, require("torch.utils.errors").describe(self), k, k))
      end
      return f(self, ...)
    end
  end
end

-- Marks the root so is_module can recognise instances of every class.
Module.__is_module = true
Module.__name = "Module"
M.Module = make_class(nil, "Module")
-- make_class built an empty class: move the definitions into it.
for k, v in pairs(Module) do rawset(M.Module, k, v) end
M.Module.__class = M.Module

return M
