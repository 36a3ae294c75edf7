-- torch.nn.functional_conv: the convolutions of nn.functional (the book's
-- F), also torch.conv2d and torch.conv1d. Returns a table of functions
-- that torch.nn.functional merges. The options are read here; every rule
-- about shapes, dtypes and devices is the engine's (src/ops/gs_op_conv.c),
-- with PyTorch's messages. See docs/nn.md, "Convolutions".
local torch = require("torch")
local errors = require("torch.utils.errors")
local fail, check_options, describe = errors.fail, errors.check_options, errors.describe

local M = {}

-- A per-dim option as `nd` integers: a number is used for every dim, a
-- table must hold nd integers ({h, w} for conv2d).
local function ints(v, nd, what, who)
  if math.type(v) == "integer" then
    if nd == 1 then return v, 0 end
    return v, v
  end
  if type(v) == "table" and not torch.is_tensor(v) and getmetatable(v) == nil then
    local ok = #v == nd
    for i = 1, #v do ok = ok and math.type(v[i]) == "integer" end
    if ok then return v[1], v[2] or 0 end
    local shown = {}
    for i = 1, #v do shown[i] = tostring(v[i]) end
    fail(("%s: expected %s to be a single integer value or a list of %d integers to match the convolution "
      .. "dimensions, but got %s={%s}"):format(who, what, nd, what, table.concat(shown, ", ")))
  end
  fail(("%s: expected %s to be a single integer value or a list of %d integers to match the convolution "
    .. "dimensions, but got %s"):format(who, what, nd, describe(v)))
end

-- conv(nd, who, x, w, b, opts): reads the options and calls the engine.
local function conv(nd, who, x, w, b, opts)
  errors.check_tensor(x, "input", who)
  errors.check_tensor(w, "weight", who)
  if b ~= nil and not torch.is_tensor(b) then
    -- F.conv2d(x, w, {stride = 2}): the options in the bias's place
    if type(b) == "table" and opts == nil then b, opts = nil, b
    else fail(("%s: expected the bias to be a tensor or nil, got %s"):format(who, describe(b))) end
  end
  opts = errors.options(opts, who)
  check_options(opts, who, { "stride", "padding", "dilation", "groups" })
  local sh, sw = ints(opts.stride or 1, nd, "stride", who)
  local dh, dw = ints(opts.dilation or 1, nd, "dilation", who)
  local groups = opts.groups or 1
  if math.type(groups) ~= "integer" then
    fail(("%s: groups must be an integer, got %s"):format(who, describe(groups)))
  end
  local padding, mode, ph, pw = opts.padding or 0, "explicit", 0, 0
  if type(padding) == "string" then
    if padding ~= "same" and padding ~= "valid" then
      fail(("%s: Invalid padding string: '%s' (expected 'same' or 'valid')"):format(who, padding))
    end
    mode = padding
  else
    ph, pw = ints(padding, nd, "padding", who)
  end
  return torch._conv(x, w, b, nd, sh, sw, ph, pw, dh, dw, groups, mode)
end

-- conv2d(input, weight[, bias[, {stride =, padding =, dilation =, groups =}]]):
-- input (N, C, H, W) or (C, H, W), weight (Cout, C/groups, kH, kW).
function M.conv2d(x, w, b, opts) return conv(2, "conv2d", x, w, b, opts) end

-- conv1d(input, weight[, bias[, opts]]): input (N, C, L) or (C, L),
-- weight (Cout, C/groups, k); the 2-d convolution over a height of 1.
function M.conv1d(x, w, b, opts) return conv(1, "conv1d", x, w, b, opts) end

return M
