-- torch.nn.sizes: the layers' size arguments, a number or a list of n
-- numbers (PyTorch's _single/_pair), and their printed form.
local fail = require("torch.utils.errors").fail
local errors = require("torch.utils.errors")

local S = {}

-- A size given as a number or a list of `n` numbers -> a list of n
-- integers (PyTorch's _pair / _single). `min` is the smallest allowed.
local function ntuple(v, n, who, what, min)
  local r = {}
  if math.type(v) == "integer" then
    for i = 1, n do r[i] = v end
  elseif type(v) == "table" and getmetatable(v) == nil and #v == n then
    for i = 1, n do r[i] = v[i] end
  else
    fail(string.format("%s: %s must be an integer or a list of %d integers, got %s", who, what, n, errors.describe(v)))
  end
  for i = 1, n do
    if math.type(r[i]) ~= "integer" or r[i] < min then
      fail(string.format("%s: %s must be %s integers, got %s", who, what, min == 0 and "non-negative" or "positive",
        errors.describe(v)))
    end
  end
  return r
end
S.ntuple = ntuple

-- Python's repr of a tuple of integers: (5, 5), (3,).
local function tuple_str(t)
  if #t == 1 then return "(" .. t[1] .. ",)" end
  return "(" .. table.concat(t, ", ") .. ")"
end
S.tuple_str = tuple_str

-- factory(shape[, {device =, dtype =}]) with the layer's device/dtype
-- options: the factories refuse an empty options table.
function S.make(factory, shape, device, dtype)
  if device == nil and dtype == nil then return factory(shape) end
  return factory(shape, { device = device, dtype = dtype })
end

return S
