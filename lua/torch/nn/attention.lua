-- torch.nn.attention: nn.MultiheadAttention (issue 31), PyTorch's module
-- with its parameter names (in_proj_weight, in_proj_bias, out_proj.weight,
-- out_proj.bias; q/k/v_proj_weight when kdim or vdim differ from
-- embed_dim), so state dicts line up. Written with the engine's ops
-- (linear, bmm, softmax), so autograd and every device come with it.
-- docs/attention.md documents it.
local torch = require("torch")
local errors = require("torch.utils.errors")
local fail, check_options, check_tensor, describe = errors.fail, errors.check_options, errors.check_tensor,
  errors.describe
local base = require("torch.nn.module")
local layers = require("torch.nn.layers")
local sizes = require("torch.nn.sizes")
local init = require("torch.nn.initializers")
local F = require("torch.nn.functional")

local Module, Parameter = base.Module, base.Parameter

local A = {}

-- PyTorch names the output projection's class so (a Linear that quantization
-- leaves alone); printing the module shows the name.
local OutProj = layers.Linear:extend("NonDynamicallyQuantizableLinear")

local function shape_str(t)
  local s = {}
  for i = 1, t:dim() do s[i] = tostring(t:size(i)) end
  return "[" .. table.concat(s, ", ") .. "]"
end

local function same_shape(t, want)
  if t:dim() ~= #want then return false end
  for i = 1, #want do if t:size(i) ~= want[i] then return false end end
  return true
end

-- nn.MultiheadAttention(embed_dim, num_heads[, {dropout = 0, bias = true,
-- batch_first = false, kdim = embed_dim, vdim = embed_dim, device =, dtype =}]).
local MHA = Module:extend("MultiheadAttention")
A.MultiheadAttention = MHA

function MHA:init(embed_dim, num_heads, opts)
  if math.type(embed_dim) ~= "integer" or embed_dim <= 0 or math.type(num_heads) ~= "integer" or num_heads <= 0 then
    fail(("nn.MultiheadAttention(embed_dim, num_heads): expected two positive integers, got %s and %s")
      :format(describe(embed_dim), describe(num_heads)))
  end
  opts = errors.options(opts, "nn.MultiheadAttention")
  check_options(opts, "nn.MultiheadAttention", { "dropout", "bias", "batch_first", "kdim", "vdim", "device", "dtype" })
  local kdim, vdim = opts.kdim or embed_dim, opts.vdim or embed_dim
  for _, d in ipairs({ { "kdim", kdim }, { "vdim", vdim } }) do
    if math.type(d[2]) ~= "integer" or d[2] <= 0 then
      fail(("nn.MultiheadAttention: %s must be a positive integer, got %s"):format(d[1], describe(d[2])))
    end
  end
  local dropout = opts.dropout or 0.0
  if type(dropout) ~= "number" or not (dropout >= 0 and dropout <= 1) then
    fail("dropout probability has to be between 0 and 1, but got " .. describe(dropout))
  end
  if embed_dim % num_heads ~= 0 then fail("embed_dim must be divisible by num_heads") end
  self.embed_dim, self.kdim, self.vdim = embed_dim, kdim, vdim
  self._qkv_same_embed_dim = kdim == embed_dim and vdim == embed_dim
  self.num_heads = num_heads
  self.dropout = dropout
  self.batch_first = opts.batch_first and true or false
  self.head_dim = embed_dim // num_heads
  local dev, dt = opts.device, opts.dtype
  local function param(...) return Parameter(sizes.make(torch.empty, { ... }, dev, dt)) end
  if self._qkv_same_embed_dim then
    self.in_proj_weight = param(3 * embed_dim, embed_dim)
  else
    self.q_proj_weight = param(embed_dim, embed_dim)
    self.k_proj_weight = param(embed_dim, kdim)
    self.v_proj_weight = param(embed_dim, vdim)
  end
  local bias = opts.bias == nil or opts.bias and true or false
  if bias then self.in_proj_bias = param(3 * embed_dim) end
  self.out_proj = OutProj(embed_dim, embed_dim, { bias = bias, device = dev, dtype = dt })
  self:_reset_parameters()
end

-- As PyTorch: Xavier-uniform projections, zero biases; out_proj.weight
-- keeps Linear's initialisation.
function MHA:_reset_parameters()
  if self._qkv_same_embed_dim then
    init.xavier_uniform_(self.in_proj_weight)
  else
    init.xavier_uniform_(self.q_proj_weight)
    init.xavier_uniform_(self.k_proj_weight)
    init.xavier_uniform_(self.v_proj_weight)
  end
  if self.in_proj_bias ~= nil then
    init.constant_(self.in_proj_bias, 0)
    init.constant_(self.out_proj.bias, 0)
  end
end

-- A mask as numbers added to the scores: a boolean one becomes -inf where
-- it is true (masked out) and 0 elsewhere; a float one is added as it is.
local function additive(mask, name, dtype)
  check_tensor(mask, name, "MultiheadAttention")
  if mask.dtype == torch.bool then
    return torch.zeros(mask.shape, { dtype = dtype, device = mask.device }):masked_fill(mask, -math.huge)
  end
  if not mask:is_floating_point() then
    fail(("MultiheadAttention: only bool and floating types of %s are supported, got %s"):format(name, mask:type()))
  end
  if mask.dtype ~= dtype then mask = mask:to(dtype) end
  return mask
end

-- forward(query, key, value[, {key_padding_mask =, need_weights = true,
-- attn_mask =, average_attn_weights = true}]) -> output, weights.
-- Shapes (batch_first = false): query [L, N, E], key [S, N, kdim], value
-- [S, N, vdim], or unbatched [L, E], [S, kdim], [S, vdim]; output [L, N, E];
-- weights [N, L, S] averaged over the heads, or [N, heads, L, S]; nil when
-- need_weights is false.
function MHA:forward(query, key, value, opts)
  check_tensor(query, "query", "MultiheadAttention")
  check_tensor(key, "key", "MultiheadAttention")
  check_tensor(value, "value", "MultiheadAttention")
  opts = errors.options(opts, "MultiheadAttention")
  check_options(opts, "MultiheadAttention", { "key_padding_mask", "need_weights", "attn_mask", "average_attn_weights" })
  local need_weights = opts.need_weights == nil or opts.need_weights and true or false
  local average = opts.average_attn_weights == nil or opts.average_attn_weights and true or false
  local kpm, attn_mask = opts.key_padding_mask, opts.attn_mask
  local batched = query:dim() == 3
  if query:dim() ~= 3 and query:dim() ~= 2 then
    fail(("query should be unbatched 2D or batched 3D tensor but received %d-D query tensor"):format(query:dim()))
  end
  if key:dim() ~= query:dim() or value:dim() ~= query:dim() then
    fail(("For %s 3-D `query`, expected `key` and `value` to be %d-D but found %d-D and %d-D tensors respectively")
      :format(batched and "batched (3-D)" or "unbatched (2-D)", query:dim(), key:dim(), value:dim()))
  end
  base.check_device(self, query, { "in_proj_weight", "q_proj_weight" })
  if batched and self.batch_first then
    query, key, value = query:transpose(1, 2), key:transpose(1, 2), value:transpose(1, 2)
  elseif not batched then
    query, key, value = query:unsqueeze(2), key:unsqueeze(2), value:unsqueeze(2)
    if kpm ~= nil then check_tensor(kpm, "key_padding_mask", "MultiheadAttention"); kpm = kpm:unsqueeze(1) end
  end
  -- from here on [L, N, E] (sequence first)
  local L, N, E = query:size(1), query:size(2), query:size(3)
  local S = key:size(1)
  local H, hd = self.num_heads, self.head_dim
  if E ~= self.embed_dim then
    fail(("was expecting embedding dimension of %d, but got %d"):format(self.embed_dim, E))
  end
  if self._qkv_same_embed_dim then
    if not same_shape(value, key.shape) then
      fail(("key shape %s does not match value shape %s"):format(shape_str(key), shape_str(value)))
    end
  elseif key:size(1) ~= value:size(1) or key:size(2) ~= value:size(2) then
    fail(("key's sequence and batch dims %s do not match value's %s"):format(shape_str(key:narrow(3, 1, 0)),
      shape_str(value:narrow(3, 1, 0))))
  end
  if key:size(2) ~= N then
    fail(("MultiheadAttention: key and value have batch size %d, query %d"):format(key:size(2), N))
  end
  if key:size(3) ~= self.kdim or value:size(3) ~= self.vdim then
    fail(("MultiheadAttention: expected key and value with %d and %d features (kdim, vdim), got %s and %s")
      :format(self.kdim, self.vdim, shape_str(key), shape_str(value)))
  end

  -- the input projections: one packed weight's three blocks, or three weights
  local wq, wk, wv
  if self._qkv_same_embed_dim then
    local w = self.in_proj_weight
    wq, wk, wv = w:narrow(1, 1, E), w:narrow(1, E + 1, E), w:narrow(1, 2 * E + 1, E)
  else
    wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
  end
  local bq, bk, bv
  if self.in_proj_bias ~= nil then
    local b = self.in_proj_bias
    bq, bk, bv = b:narrow(1, 1, E), b:narrow(1, E + 1, E), b:narrow(1, 2 * E + 1, E)
  end
  -- heads side by side in the batch: [N * H, L, head_dim]
  local q = F.linear(query, wq, bq):reshape(L, N * H, hd):transpose(1, 2)
  local k = F.linear(key, wk, bk):reshape(S, N * H, hd):transpose(1, 2)
  local v = F.linear(value, wv, bv):reshape(S, N * H, hd):transpose(1, 2)

  -- the masks, merged into one added to the scores: [1 or N * H, L or 1, S]
  local mask
  if attn_mask ~= nil then
    mask = additive(attn_mask, "attn_mask", q.dtype)
    if mask:dim() == 2 then
      if not same_shape(mask, { L, S }) then
        fail(("The shape of the 2D attn_mask is %s, but should be [%d, %d]."):format(shape_str(mask), L, S))
      end
      mask = mask:unsqueeze(1)
    elseif mask:dim() == 3 then
      if not same_shape(mask, { N * H, L, S }) then
        fail(("The shape of the 3D attn_mask is %s, but should be [%d, %d, %d]."):format(shape_str(mask), N * H, L, S))
      end
    else
      fail(("attn_mask's dimension %d is not supported"):format(mask:dim()))
    end
  end
  if kpm ~= nil then
    local m = additive(kpm, "key_padding_mask", q.dtype)
    if not same_shape(m, { N, S }) then
      fail(("expected key_padding_mask of shape [%d, %d], but got %s"):format(N, S, shape_str(m)))
    end
    m = m:reshape(N, 1, 1, S):expand(N, H, 1, S):reshape(N * H, 1, S)
    mask = mask == nil and m or mask + m
  end

  local scores = (q * (1 / math.sqrt(hd))):bmm(k:transpose(2, 3))
  if mask ~= nil then scores = scores + mask end
  local w = scores:softmax(-1)
  if self.training and self.dropout > 0 then w = F.dropout(w, self.dropout) end
  local out = w:bmm(v):transpose(1, 2):reshape(L * N, E)
  out = F.linear(out, self.out_proj.weight, self.out_proj.bias):reshape(L, N, E)

  local weights
  if need_weights then
    weights = w:reshape(N, H, L, S)
    if average then weights = weights:sum(2) / H end
    if not batched then weights = weights:squeeze(1) end
  end
  if not batched then out = out:squeeze(2)
  elseif self.batch_first then out = out:transpose(1, 2) end
  return out, weights
end

return A
