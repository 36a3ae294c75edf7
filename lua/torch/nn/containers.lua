-- torch.nn.containers: the modules that hold other modules in order.
-- nn.Sequential calls them in turn; nn.ModuleList only holds them
-- (registered, moved, saved). Children are named "1", "2", ..., and
-- net[i] is the i-th (1-based, negative from the end).
local fail = require("torch.utils.errors").fail
local base = require("torch.nn.module")

local Module = base.Module

local L = {}

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

return L
