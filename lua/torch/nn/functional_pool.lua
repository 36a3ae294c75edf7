-- torch.nn.functional_pool: the functional forms of pooling, batch norm,
-- pad and interpolate (issue 20), as PyTorch's torch.nn.functional has
-- them, with Lua's options tables for keyword arguments. This file reads
-- and checks the arguments; the engine (src/ops/gs_op_pool.c, gs_op_norm.c,
-- gs_op_resize.c through torch._pool2d & co.) checks shapes and computes,
-- with autograd. Returns a table of functions that nn.functional merges.
local torch = require("torch")
local E = require("torch.utils.errors")

local F = {}

local function is_int(v) return math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v) and v == v and math.abs(v) < 2^53) end

-- A number or a pair {h, w} of integers (PyTorch's _pair).
local function pair(v, what, who)
  if is_int(v) then return math.tointeger(v), math.tointeger(v) end
  if type(v) == "table" and getmetatable(v) == nil and #v == 2 and is_int(v[1]) and is_int(v[2]) then
    return math.tointeger(v[1]), math.tointeger(v[2])
  end
  if type(v) == "table" and #v == 1 and is_int(v[1]) then return math.tointeger(v[1]), math.tointeger(v[1]) end
  E.fail(("%s: %s must be an integer or a pair {h, w} of integers, got %s"):format(who, what, E.describe(v)))
end

local function check_input(x, who)
  E.check_tensor(x, "input", who)
end

local function flag(v, what, who, default)
  if v == nil then return default end
  if type(v) ~= "boolean" then
    E.fail(("%s: %s must be true or false, got %s"):format(who, what, E.describe(v)))
  end
  return v
end

local function window_options(who, x, kernel_size, opts, allowed)
  check_input(x, who)
  opts = E.options(opts, who)
  E.check_options(opts, who, allowed)
  local kh, kw = pair(kernel_size, "kernel_size", who)
  local sh, sw = kh, kw
  if opts.stride ~= nil then sh, sw = pair(opts.stride, "stride", who) end
  local ph, pw = pair(opts.padding or 0, "padding", who)
  return opts, kh, kw, sh, sw, ph, pw
end

-- max_pool2d(x, kernel_size[, {stride = kernel_size, padding = 0,
-- dilation = 1, ceil_mode = false, return_indices = false}]): with
-- return_indices, also the indices of the maxima (PyTorch's: 0-based
-- positions in each flattened H*W plane).
function F.max_pool2d(x, kernel_size, opts)
  local who = "max_pool2d"
  local o, kh, kw, sh, sw, ph, pw = window_options(who, x, kernel_size, opts,
    { "stride", "padding", "dilation", "ceil_mode", "return_indices" })
  local dh, dw = pair(o.dilation or 1, "dilation", who)
  return torch._pool2d(x, "max", kh, kw, sh, sw, ph, pw, dh, dw, flag(o.ceil_mode, "ceil_mode", who, false),
    false, flag(o.return_indices, "return_indices", who, false))
end

-- avg_pool2d(x, kernel_size[, {stride = kernel_size, padding = 0,
-- ceil_mode = false, count_include_pad = true}])
function F.avg_pool2d(x, kernel_size, opts)
  local who = "avg_pool2d"
  local o, kh, kw, sh, sw, ph, pw = window_options(who, x, kernel_size, opts,
    { "stride", "padding", "ceil_mode", "count_include_pad" })
  return torch._pool2d(x, "avg", kh, kw, sh, sw, ph, pw, 1, 1, flag(o.ceil_mode, "ceil_mode", who, false),
    flag(o.count_include_pad, "count_include_pad", who, true), false)
end

-- adaptive_avg_pool2d(x, output_size): output_size a number or {h, w};
-- windows split the input as PyTorch does (floor(i*H/h) to ceil((i+1)*H/h)).
function F.adaptive_avg_pool2d(x, output_size)
  local who = "adaptive_avg_pool2d"
  check_input(x, who)
  local oh, ow = pair(output_size, "output_size", who)
  return torch._adaptive_pool2d(x, "avg", oh, ow, false)
end

-- adaptive_max_pool2d(x, output_size[, {return_indices = false}])
function F.adaptive_max_pool2d(x, output_size, opts)
  local who = "adaptive_max_pool2d"
  check_input(x, who)
  opts = E.options(opts, who)
  E.check_options(opts, who, { "return_indices" })
  local oh, ow = pair(output_size, "output_size", who)
  return torch._adaptive_pool2d(x, "max", oh, ow, flag(opts.return_indices, "return_indices", who, false))
end

local function opt_tensor(v, what, who)
  if v ~= nil and not torch.is_tensor(v) then
    E.fail(("%s: %s must be a tensor or nil, got %s"):format(who, what, E.describe(v)))
  end
  return v
end

local function number(v, what, who, default)
  if v == nil then return default end
  if type(v) ~= "number" then E.fail(("%s: %s must be a number, got %s"):format(who, what, E.describe(v))) end
  return v
end

-- batch_norm(x, running_mean, running_var[, {weight =, bias =,
-- training = false, momentum = 0.1, eps = 1e-5}]): x is (N, C), (N, C, L)
-- or (N, C, H, W). Training normalises with the batch's statistics and
-- updates running_mean/running_var in place (unbiased variance):
-- running = (1 - momentum) * running + momentum * batch statistic.
function F.batch_norm(x, running_mean, running_var, opts)
  local who = "batch_norm"
  check_input(x, who)
  opts = E.options(opts, who)
  E.check_options(opts, who, { "weight", "bias", "training", "momentum", "eps" })
  return torch._batch_norm(x, opt_tensor(running_mean, "running_mean", who),
    opt_tensor(running_var, "running_var", who), opt_tensor(opts.weight, "weight", who),
    opt_tensor(opts.bias, "bias", who), flag(opts.training, "training", who, false),
    number(opts.momentum, "momentum", who, 0.1), number(opts.eps, "eps", who, 1e-5))
end

-- pad(x, pads[, {mode = 'constant', value = 0}]): pads in PyTorch's order,
-- last dim first: {left, right[, top, bottom[, front, back ...]]}; negative
-- pads crop.
function F.pad(x, pads, opts)
  local who = "pad"
  check_input(x, who)
  if type(opts) == "string" then
    E.fail(("pad: the mode goes in the options table: pad(x, pads, {mode = %q})"):format(opts))
  end
  opts = E.options(opts, who)
  E.check_options(opts, who, { "mode", "value" })
  if type(pads) ~= "table" or getmetatable(pads) ~= nil then
    E.fail(("pad: pads must be a list of integers {left, right, ...}, got %s"):format(E.describe(pads)))
  end
  for i = 1, #pads do
    if not is_int(pads[i]) then
      E.fail(("pad: pads must be a list of integers, got %s at position %d"):format(E.describe(pads[i]), i))
    end
  end
  local mode = opts.mode or "constant"
  if mode ~= "constant" then
    E.fail(("pad: mode %s is not supported (only 'constant')"):format(E.describe(mode)))
  end
  local value = opts.value
  if value ~= nil and type(value) ~= "number" and type(value) ~= "boolean" then
    E.fail(("pad: value must be a number, got %s"):format(E.describe(value)))
  end
  return torch._pad(x, pads, value)
end

local MODES = { nearest = true, bilinear = true, linear = true }

-- interpolate(x, {size = | scale_factor =, mode = 'nearest' | 'bilinear'
-- | 'linear', align_corners = false, recompute_scale_factor = false}):
-- resizes the spatial dims of (N, C, H, W) (nearest, bilinear) or
-- (N, C, L) (nearest, linear).
function F.interpolate(x, opts)
  local who = "interpolate"
  check_input(x, who)
  opts = E.options(opts, who)
  E.check_options(opts, who, { "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor" })
  local mode = opts.mode or "nearest"
  if not MODES[mode] then
    E.fail(("interpolate: mode must be 'nearest', 'linear' or 'bilinear', got %s"):format(E.describe(mode)))
  end
  if opts.align_corners ~= nil and mode == "nearest" then
    E.fail("align_corners option can only be set with the interpolating modes: linear | bilinear")
  end
  local align = flag(opts.align_corners, "align_corners", who, false)
  local spatial = x:dim() - 2
  if mode == "bilinear" and x:dim() ~= 4 then
    E.fail(("Got %dD input, but bilinear mode needs 4D input"):format(x:dim()))
  elseif mode == "linear" and x:dim() ~= 3 then
    E.fail(("Got %dD input, but linear mode needs 3D input"):format(x:dim()))
  elseif spatial ~= 1 and spatial ~= 2 then
    E.fail(("interpolate: expected a 3-d (N, C, L) or 4-d (N, C, H, W) input, got a %d-d tensor"):format(x:dim()))
  end
  if opts.size == nil and opts.scale_factor == nil then E.fail("either size or scale_factor should be defined") end
  if opts.size ~= nil and opts.scale_factor ~= nil then E.fail("only one of size or scale_factor should be defined") end
  local in_h = spatial == 2 and x:size(3) or 1
  local in_w = x:size(x:dim())
  local oh, ow, fh, fw
  local function one_or_pair(v, what, check)
    if type(v) == "table" and getmetatable(v) == nil then
      if #v ~= spatial then
        E.fail(("Input and output must have the same number of spatial dimensions, but got input with spatial " ..
          "dimensions of %d and %s of %d values"):format(spatial, what, #v))
      end
      for i = 1, #v do check(v[i]) end
      if spatial == 1 then return 1, v[1] end
      return v[1], v[2]
    end
    check(v)
    return spatial == 2 and v or 1, v
  end
  if opts.size ~= nil then
    oh, ow = one_or_pair(opts.size, "output size", function(v)
      if not is_int(v) then E.fail(("interpolate: size must be an integer or a list of integers, got %s"):format(E.describe(v))) end
    end)
    oh, ow = math.tointeger(oh), math.tointeger(ow)
  else
    fh, fw = one_or_pair(opts.scale_factor, "scale_factor", function(v)
      if type(v) ~= "number" or not (v > 0) or v == math.huge then
        E.fail(("interpolate: scale_factor must be a positive number, got %s"):format(E.describe(v)))
      end
    end)
    if spatial == 1 then fh = 0 end
    -- PyTorch: floor(float(input size) * scale_factor), and the kernels
    -- step by 1/scale_factor
    oh = spatial == 2 and math.floor(in_h * fh) or 1
    ow = math.floor(in_w * fw)
    -- a float past 2^63 has no integer: say which size, not Lua's words
    for _, o in ipairs({ { oh, in_h, fh }, { ow, in_w, fw } }) do
      if math.type(o[1]) ~= "integer" then
        E.fail(("interpolate: scale_factor %s makes an output size of %.17g from %d, too large (at most 2^63 - 1)")
          :format(tostring(o[3]), o[2] * o[3], o[2]))
      end
    end
    -- recompute_scale_factor: the kernels step by in/out, as for a size
    if flag(opts.recompute_scale_factor, "recompute_scale_factor", who, false) then fh, fw = 0, 0 end
  end
  if spatial == 1 then
    local y = torch._interpolate(x:unsqueeze(3), mode == "nearest" and "nearest" or "bilinear", align, 1, ow, 0, fw or 0)
    return y:squeeze(3)
  end
  return torch._interpolate(x, mode, align, oh, ow, fh or 0, fw or 0)
end

return F
