-- torch.utils.class: how the library's extensible classes are made
-- (nn.Module, optim.Optimizer, utils.data.Dataset), so all of them behave
-- alike under :extend.
--
-- A class is its instances' metatable. Lua reads metamethods raw from a
-- metatable, so a derived class copies its parent's ("__"-prefixed keys);
-- everything else is found in the parent through the class's own
-- metatable. A class whose __index is itself (the plain pattern) gives
-- its children the same; a class with an __index function (nn.Module's
-- field lookup) passes the function on.
local M = {}

-- The default constructor: Cls(...) makes an instance and calls init.
function M.construct(cls, ...)
  local self = setmetatable({}, cls)
  self:init(...)
  return self
end

-- A new class named `name` deriving from `parent` (nil for a root class).
-- `meta`: fields of the class's own metatable (default: __call =
-- M.construct).
function M.extend(parent, name, meta)
  local cls = {}
  if parent then
    for k, v in pairs(parent) do
      if type(k) == "string" and k:sub(1, 2) == "__" then cls[k] = v end
    end
  end
  if cls.__index == nil or cls.__index == parent then cls.__index = cls end
  cls.__name = name
  cls.super = parent
  local mt = { __index = parent, __call = M.construct }
  for k, v in pairs(meta or {}) do mt[k] = v end
  return setmetatable(cls, mt)
end

return M
