-- torch.nn.initializers, reachable as nn.init: PyTorch's torch.nn.init
-- functions. Each fills its tensor in place (outside autograd) and
-- returns it. Dims and fans follow PyTorch: for a weight [out, in, ...],
-- fan_in = in * receptive field, fan_out = out * receptive field.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local options = require("torch.utils.errors").options

local I = {}

local function data(t)
  if not torch.is_tensor(t) then fail("nn.init: expected a tensor, got " .. type(t)) end
  return t.data
end

function I._calculate_fan_in_and_fan_out(t)
  local s = t.shape
  if #s < 2 then
    fail("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
  end
  local receptive = 1
  for i = 3, #s do receptive = receptive * s[i] end
  return s[2] * receptive, s[1] * receptive
end

-- calculate_gain(nonlinearity[, param]), PyTorch's table.
function I.calculate_gain(nonlinearity, param)
  local linear = { linear = true, conv1d = true, conv2d = true, conv3d = true, conv_transpose1d = true,
    conv_transpose2d = true, conv_transpose3d = true, sigmoid = true }
  if linear[nonlinearity] then return 1 end
  if nonlinearity == "tanh" then return 5.0 / 3 end
  if nonlinearity == "relu" then return math.sqrt(2.0) end
  if nonlinearity == "leaky_relu" then
    local slope = param == nil and 0.01 or param
    if type(slope) ~= "number" then fail("negative_slope " .. tostring(slope) .. " not a valid number") end
    return math.sqrt(2.0 / (1 + slope * slope))
  end
  if nonlinearity == "selu" then return 3.0 / 4 end
  fail("Unsupported nonlinearity " .. tostring(nonlinearity))
end

-- The arguments after the tensor as PyTorch's keywords: positional
-- numbers (uniform_(w, -0.1, 0.1)) or one options table (normal_(w,
-- {std = 0.01})), which may also follow positional ones.
local function args(who, names, ...)
  local n = select("#", ...)
  local r = table.pack(...)
  local last = r[n]
  if n >= 1 and type(last) == "table" and getmetatable(last) == nil and (next(last) == nil or #last == 0) then
    check_options(last, "nn.init." .. who, names)
    r.n, r[n] = n - 1, nil
    for i, k in ipairs(names) do if last[k] ~= nil then r[i] = last[k] end end
  end
  for i, k in ipairs(names) do
    local v = r[i]
    if v ~= nil and type(v) ~= "number" then
      fail(("nn.init.%s: %s must be a number, got %s"):format(who, k, require("torch.utils.errors").describe(v)))
    end
  end
  return table.unpack(r, 1, #names)
end

function I.uniform_(t, ...)
  local a, b = args("uniform_", { "a", "b" }, ...)
  data(t):uniform_(a or 0.0, b or 1.0)
  return t
end

function I.normal_(t, ...)
  local mean, std = args("normal_", { "mean", "std" }, ...)
  data(t):normal_(mean or 0.0, std or 1.0)
  return t
end

function I.constant_(t, ...)
  local v = args("constant_", { "val" }, ...)
  if v == nil then fail("nn.init.constant_(tensor, val): the value is needed, e.g. constant_(w, 0.5)") end
  data(t):fill_(v)
  return t
end

function I.zeros_(t) return I.constant_(t, 0) end
function I.ones_(t) return I.constant_(t, 1) end

local function fan(t, mode)
  local fan_in, fan_out = I._calculate_fan_in_and_fan_out(t)
  mode = mode or "fan_in"
  if mode == "fan_in" then return fan_in elseif mode == "fan_out" then return fan_out end
  fail("Mode " .. tostring(mode) .. " not supported, please use one of fan_in, fan_out")
end

-- kaiming_uniform_(t[, {a = 0, mode = "fan_in", nonlinearity = "leaky_relu"}])
function I.kaiming_uniform_(t, opts)
  opts = options(opts, "nn.init.kaiming_uniform_")
  check_options(opts, "nn.init.kaiming_uniform_", { "a", "mode", "nonlinearity" })
  -- PyTorch: a tensor with no elements is left as it is (nn.Conv2d(0, 0, 3)
  -- has fan_in 0, and its bound would be infinite)
  if data(t):numel() == 0 then return t end
  local gain = I.calculate_gain(opts.nonlinearity or "leaky_relu", opts.a or 0)
  local std = gain / math.sqrt(fan(t, opts.mode))
  local bound = math.sqrt(3.0) * std
  return I.uniform_(t, -bound, bound)
end

function I.kaiming_normal_(t, opts)
  opts = options(opts, "nn.init.kaiming_normal_")
  check_options(opts, "nn.init.kaiming_normal_", { "a", "mode", "nonlinearity" })
  if data(t):numel() == 0 then return t end
  local gain = I.calculate_gain(opts.nonlinearity or "leaky_relu", opts.a or 0)
  return I.normal_(t, 0, gain / math.sqrt(fan(t, opts.mode)))
end

local function gain_of(gain, who)
  if gain == nil then return 1.0 end
  if type(gain) ~= "number" then fail(who .. ": gain must be a number, got " .. type(gain)) end
  return gain
end

function I.xavier_uniform_(t, ...)
  local gain = gain_of(args("xavier_uniform_", { "gain" }, ...), "xavier_uniform_")
  local fan_in, fan_out = I._calculate_fan_in_and_fan_out(t)
  local std = (gain or 1.0) * math.sqrt(2.0 / (fan_in + fan_out))
  local a = math.sqrt(3.0) * std
  return I.uniform_(t, -a, a)
end

function I.xavier_normal_(t, ...)
  local gain = gain_of(args("xavier_normal_", { "gain" }, ...), "xavier_normal_")
  local fan_in, fan_out = I._calculate_fan_in_and_fan_out(t)
  return I.normal_(t, 0, (gain or 1.0) * math.sqrt(2.0 / (fan_in + fan_out)))
end

return I
