-- torch.nn.collections: the ordered containers modules are built from.
-- OMap (internal: parameters, buffers and children in registration order),
-- nn.OrderedDict (what state_dict() returns) and named_list (what
-- named_parameters() and its kin return).
local py_repr = require("torch.nn.pyrepr").py_repr

local M = {}

-- Internal ordered map: keys (a list) and vals (key -> value).
local OMap = {}
OMap.__index = OMap
function OMap.new() return setmetatable({ keys = {}, vals = {} }, OMap) end
function OMap:get(k) return self.vals[k] end
function OMap:has(k) return self.vals[k] ~= nil end
function OMap:set(k, v)
  if v == nil then return self:remove(k) end
  if self.vals[k] == nil then self.keys[#self.keys + 1] = k end
  self.vals[k] = v
end
function OMap:remove(k)
  if self.vals[k] == nil then return end
  self.vals[k] = nil
  for i, key in ipairs(self.keys) do
    if key == k then table.remove(self.keys, i); break end
  end
end
function OMap:count() return #self.keys end
-- for k, v in m:items() do
function OMap:items()
  local i = 0
  return function()
    i = i + 1
    local k = self.keys[i]
    if k ~= nil then return k, self.vals[k] end
  end
end
M.OMap = OMap

-- nn.OrderedDict: what state_dict() returns. A table of key -> value
-- (sd["fc.weight"]) that remembers insertion order: pairs(sd) goes in
-- that order, sd.__keys is the list of keys, #sd the count, and tostring
-- prints like Python's OrderedDict.
local function od_keys(t)
  local mt = getmetatable(t)
  local r = {}
  for _, k in ipairs(mt.__order) do
    if rawget(t, k) ~= nil then r[#r + 1] = k end
  end
  return r
end

local function OrderedDict(init_pairs)
  local order, seen = {}, {}
  local mt = { __name = "OrderedDict", __order = order }
  mt.__index = function(t, k) if k == "__keys" then return od_keys(t) end end
  mt.__newindex = function(t, k, v)
    if v ~= nil and not seen[k] then seen[k] = true; order[#order + 1] = k end
    rawset(t, k, v)
  end
  mt.__pairs = function(t)
    local keys, i = od_keys(t), 0
    return function()
      i = i + 1
      local k = keys[i]
      if k ~= nil then return k, rawget(t, k) end
    end, t, nil
  end
  mt.__len = function(t) return #od_keys(t) end
  mt.__tostring = function(t)
    local parts = {}
    for _, k in ipairs(od_keys(t)) do
      parts[#parts + 1] = "(" .. py_repr(k) .. ", " .. tostring(rawget(t, k)) .. ")"
    end
    return "OrderedDict([" .. table.concat(parts, ", ") .. "])"
  end
  local d = setmetatable({}, mt)
  for _, kv in ipairs(init_pairs or {}) do d[kv[1]] = kv[2] end
  return d
end
M.OrderedDict = OrderedDict

-- A list of {name, value} pairs that a generic for can also walk directly:
--   for name, p in net:named_parameters() do ... end
--   local first = net:named_parameters()[1]   -- {"fc.weight", p}
local function named_list(list)
  local pos = {}
  for i, kv in ipairs(list) do pos[kv[1]] = i end
  return setmetatable(list, {
    __call = function(self, _, prev)
      local i = prev == nil and 1 or (pos[prev] or #self) + 1
      local kv = self[i]
      if kv then return kv[1], kv[2] end
    end,
  })
end
M.named_list = named_list

return M
