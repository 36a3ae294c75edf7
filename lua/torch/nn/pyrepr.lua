-- torch.nn.pyrepr: Python's printed forms of numbers, booleans and None,
-- which module reprs (extra_repr) must match character for character.
local M = {}

-- Python's repr of a number: integers as such, floats in the shortest form
-- that reads back to the same double, always with a '.' or an exponent.
local function py_number(v)
  if math.type(v) == "integer" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
  local s
  for prec = 1, 17 do
    s = string.format("%." .. prec .. "g", v)
    if tonumber(s) == v then break end
  end
  if s:find("e") then
    -- Python writes 1e-05, 1e+20: at least two exponent digits
    local mant, sign, exp = s:match("^(.-)e([%+%-])0*(%d+)$")
    if #exp < 2 then exp = "0" .. exp end
    s = mant .. "e" .. sign .. exp
    -- Python uses scientific notation only below 1e-4 or from 1e16
  elseif not s:find("%.") and not s:find("n") then
    s = s .. ".0"
  end
  local a = math.abs(v)
  if a ~= 0 and (a < 1e-4 or a >= 1e16) then return s end
  if s:find("e") then -- %g chose an exponent where Python would not
    s = string.format("%.17f", v):gsub("0+$", "")
    if s:sub(-1) == "." then s = s .. "0" end
  end
  return s
end
M.py_number = py_number

local function py_bool(b) return b and "True" or "False" end
M.py_bool = py_bool

-- Python's repr of a value inside an extra_repr.
local function py_repr(v)
  if type(v) == "number" then return py_number(v) end
  if type(v) == "boolean" then return py_bool(v) end
  if v == nil then return "None" end
  if type(v) == "string" then return "'" .. v .. "'" end
  return tostring(v)
end
M.py_repr = py_repr

return M
