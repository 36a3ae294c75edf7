-- torch.nn.functional_seq: the functional forms the sequence and attention
-- chapters use (issue 31), merged into nn.functional: gelu, one_hot,
-- embedding, layer_norm. Written with the engine's ops, so autograd and
-- every device come with them.
local torch = require("torch")
local errors = require("torch.utils.errors")
local fail, check_options, check_tensor, describe = errors.fail, errors.check_options, errors.check_tensor,
  errors.describe

local F = {}

local SQRT1_2 = math.sqrt(0.5)
local SQRT_2_PI = math.sqrt(2 / math.pi)

-- gelu(x[, {approximate = "none"}]): x * Phi(x), Phi the normal CDF
-- (0.5 * (1 + erf(x / sqrt 2))); approximate = "tanh" is the tanh form.
-- approximate may also be given as a string, gelu(x, "tanh").
function F.gelu(x, opts)
  check_tensor(x, "input", "gelu")
  local approximate = opts
  if type(opts) == "table" then check_options(opts, "gelu", { "approximate" }); approximate = opts.approximate end
  approximate = approximate or "none"
  if approximate == "none" then return x * ((x * SQRT1_2):erf() + 1) * 0.5 end
  if approximate == "tanh" then
    return x * (((x + x * x * x * 0.044715) * SQRT_2_PI):tanh() + 1) * 0.5
  end
  fail("approximate argument must be either none or tanh.")
end

-- one_hot(labels[, num_classes]): int64 [..., num_classes] with a 1 at each
-- label. Labels are 1-based, as gshell's class labels (cross_entropy,
-- index_select): label 1 sets the first column. Without num_classes it is
-- the largest label.
function F.one_hot(t, num_classes)
  check_tensor(t, "input", "one_hot")
  if type(num_classes) == "table" then check_options(num_classes, "one_hot", { "num_classes" }); num_classes = num_classes.num_classes end
  if t.dtype ~= torch.int64 then fail("one_hot is only applicable to index tensor.") end
  if num_classes == nil then num_classes = -1 end
  if math.type(num_classes) ~= "integer" then fail("one_hot: num_classes must be an integer, got " .. describe(num_classes)) end
  if t:numel() == 0 then
    if num_classes <= 0 then fail("Can not infer total number of classes from empty tensor.") end
  else
    -- one read of the smallest and largest label (PyTorch reads them too)
    local lo, hi = t:min():item(), t:max():item()
    if lo < 1 then fail("Class values must be at least 1 (gshell's labels are 1-based), got " .. lo .. ".") end
    if num_classes == -1 then num_classes = hi
    elseif hi > num_classes then fail("Class values must not exceed num_classes (labels are 1-based), got " .. hi .. ".") end
  end
  local classes = torch.arange(1, num_classes + 1, { device = t.device })
  return t:unsqueeze(-1):eq(classes):long()
end

local function check_ids(input, who)
  check_tensor(input, "input", who)
  if input.dtype ~= torch.int64 and input.dtype ~= torch.int32 then
    fail(("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got %s "
      .. "instead (while checking arguments for embedding)"):format(input:type()))
  end
end

-- embedding(ids, weight[, {padding_idx =}]): the rows of weight [n, dim]
-- at the 1-based ids, shaped [ids..., dim]. The row at padding_idx gets no
-- gradient (it is read from weight:detach()).
function F.embedding(input, weight, opts)
  check_ids(input, "embedding")
  check_tensor(weight, "weight", "embedding")
  if type(opts) == "number" then opts = { padding_idx = opts } end
  opts = errors.options(opts, "embedding")
  check_options(opts, "embedding", { "padding_idx" })
  if weight:dim() ~= 2 then fail("'weight' must be 2-D") end
  local shape = {}
  for i = 1, input:dim() do shape[i] = input:size(i) end
  shape[#shape + 1] = weight:size(2)
  local ids = input:reshape(-1)
  if ids.dtype ~= torch.int64 then ids = ids:long() end
  local out = weight:index_select(1, ids)
  local pad = opts.padding_idx
  if pad ~= nil then
    if pad < 0 then pad = pad + weight:size(1) + 1 end
    local frozen = weight:detach():index_select(1, ids)
    out = torch.where(ids:eq(pad):unsqueeze(2), frozen, out)
  end
  return out:reshape(shape)
end

local function normalized(shape, who)
  if math.type(shape) == "integer" then return { shape } end
  if type(shape) == "table" and not torch.is_tensor(shape) then
    local r = {}
    for i = 1, #shape do
      if math.type(shape[i]) ~= "integer" then
        fail(who .. ": normalized_shape must be an integer or a list of integers, got " .. describe(shape))
      end
      r[i] = shape[i]
    end
    return r
  end
  fail(who .. ": normalized_shape must be an integer or a list of integers, got " .. describe(shape))
end

local function shape_str(s)
  local p = {}
  for i = 1, #s do p[i] = tostring(s[i]) end
  return "[" .. table.concat(p, ", ") .. "]"
end

-- layer_norm(x, normalized_shape[, weight[, bias[, eps]]]) or
-- layer_norm(x, normalized_shape, {weight =, bias =, eps = 1e-5}):
-- each sample normalised over its last #normalized_shape dims (mean 0,
-- biased variance 1), then scaled and shifted elementwise.
function F.layer_norm(x, normalized_shape, weight, bias, eps)
  check_tensor(x, "input", "layer_norm")
  if type(weight) == "table" and not torch.is_tensor(weight) then
    check_options(weight, "layer_norm", { "weight", "bias", "eps" })
    weight, bias, eps = weight.weight, weight.bias, weight.eps
  end
  local ns = normalized(normalized_shape, "layer_norm")
  eps = eps or 1e-5
  if type(eps) ~= "number" then fail("layer_norm: eps must be a number, got " .. describe(eps)) end
  local k = #ns
  local ok = x:dim() >= k and k >= 1
  for i = 1, k do if ok and x:size(x:dim() - k + i) ~= ns[i] then ok = false end end
  if not ok then
    local xs = {}
    for i = 1, x:dim() do xs[i] = x:size(i) end
    fail(("Given normalized_shape=%s, expected input with shape [*, %s], but got input of size%s")
      :format(shape_str(ns), table.concat(ns, ", "), shape_str(xs)))
  end
  for _, p in ipairs({ { weight, "weight" }, { bias, "bias" } }) do
    if p[1] ~= nil then
      check_tensor(p[1], p[2], "layer_norm")
      local same = p[1]:dim() == k
      for i = 1, k do if same and p[1]:size(i) ~= ns[i] then same = false end end
      if not same then
        fail(("layer_norm: %s must have the normalized shape %s, got %s"):format(p[2], shape_str(ns), describe(p[1])))
      end
    end
  end
  local lead = {}
  for i = 1, x:dim() - k do lead[i] = x:size(i) end
  lead[#lead + 1] = -1
  local xr = x:reshape(lead)
  local d = xr - xr:mean(-1, true)
  local y = d * ((d * d):mean(-1, true) + eps):rsqrt()
  y = y:reshape(x.shape)
  if weight ~= nil then y = y * weight end
  if bias ~= nil then y = y + bias end
  return y
end

return F
