-- torch.nn.sequence: the layers of the sequence and attention chapters
-- (issue 31): nn.GELU, nn.Embedding, nn.LayerNorm, with PyTorch's
-- parameter names (weight, bias) so state dicts line up. Their
-- computations are nn.functional's (functional_seq.lua).
local torch = require("torch")
local errors = require("torch.utils.errors")
local fail, check_options, describe = errors.fail, errors.check_options, errors.describe
local base = require("torch.nn.module")
local sizes = require("torch.nn.sizes")
local F = require("torch.nn.functional")

local Module, Parameter = base.Module, base.Parameter
local py_number, py_bool = base.py_number, base.py_bool

local S = {}

-- nn.GELU([approximate = "none"]) or nn.GELU({approximate = "tanh"}).
local GELU = Module:extend("GELU")
S.GELU = GELU

function GELU:init(approximate)
  if type(approximate) == "table" then
    check_options(approximate, "nn.GELU", { "approximate" })
    approximate = approximate.approximate
  end
  approximate = approximate or "none"
  if approximate ~= "none" and approximate ~= "tanh" then fail("approximate argument must be either none or tanh.") end
  self.approximate = approximate
end

function GELU:forward(x) return F.gelu(x, self.approximate) end
function GELU:extra_repr() return ("approximate='%s'"):format(self.approximate) end

-- nn.Embedding(num_embeddings, embedding_dim[, {padding_idx =, device =,
-- dtype =}]): a table of num_embeddings vectors looked up by 1-based ids.
-- Initialised N(0, 1) as PyTorch's, with the padding row zero.
local Embedding = Module:extend("Embedding")
S.Embedding = Embedding

function Embedding:init(num_embeddings, embedding_dim, opts)
  if math.type(num_embeddings) ~= "integer" or math.type(embedding_dim) ~= "integer" or num_embeddings < 0
      or embedding_dim < 0 then
    fail(("nn.Embedding(num_embeddings, embedding_dim): expected two non-negative integers, got %s and %s")
      :format(describe(num_embeddings), describe(embedding_dim)))
  end
  opts = errors.options(opts, "nn.Embedding")
  check_options(opts, "nn.Embedding", { "padding_idx", "device", "dtype" })
  local pad = opts.padding_idx
  if pad ~= nil then
    if math.type(pad) ~= "integer" or pad == 0 or pad > num_embeddings or pad < -num_embeddings then
      fail(("nn.Embedding: padding_idx must be within num_embeddings: 1 to %d (1-based) or -%d to -1, got %s")
        :format(num_embeddings, num_embeddings, describe(pad)))
    end
    if pad < 0 then pad = pad + num_embeddings + 1 end
  end
  self.num_embeddings = num_embeddings
  self.embedding_dim = embedding_dim
  self.padding_idx = pad
  self.weight = Parameter(sizes.make(torch.empty, { num_embeddings, embedding_dim }, opts.device, opts.dtype))
  self:reset_parameters()
end

function Embedding:reset_parameters()
  torch.no_grad(function()
    self.weight:normal_(0, 1)
    if self.padding_idx ~= nil then self.weight[self.padding_idx]:fill_(0) end
  end)
end

function Embedding:forward(input)
  base.check_device(self, input, { "weight" })
  return F.embedding(input, self.weight, { padding_idx = self.padding_idx })
end

function Embedding:extra_repr()
  local s = ("%d, %d"):format(self.num_embeddings, self.embedding_dim)
  if self.padding_idx ~= nil then s = s .. ", padding_idx=" .. self.padding_idx end
  return s
end

-- nn.LayerNorm(normalized_shape[, {eps = 1e-5, elementwise_affine = true,
-- bias = true, device =, dtype =}]): weight ones and bias zeros of the
-- normalized shape.
local LayerNorm = Module:extend("LayerNorm")
S.LayerNorm = LayerNorm

function LayerNorm:init(normalized_shape, opts)
  local ns = normalized_shape
  if math.type(ns) == "integer" then ns = { ns } end
  if type(ns) ~= "table" or torch.is_tensor(ns) or #ns == 0 then
    fail("nn.LayerNorm(normalized_shape): expected an integer or a list of integers, got " .. describe(normalized_shape))
  end
  local shape = {}
  for i = 1, #ns do
    if math.type(ns[i]) ~= "integer" or ns[i] < 0 then
      fail("nn.LayerNorm(normalized_shape): expected an integer or a list of integers, got " .. describe(normalized_shape))
    end
    shape[i] = ns[i]
  end
  opts = errors.options(opts, "nn.LayerNorm")
  check_options(opts, "nn.LayerNorm", { "eps", "elementwise_affine", "bias", "device", "dtype" })
  self.normalized_shape = shape
  self.eps = opts.eps == nil and 1e-5 or opts.eps
  if type(self.eps) ~= "number" then fail("nn.LayerNorm: eps must be a number, got " .. describe(self.eps)) end
  self.elementwise_affine = opts.elementwise_affine == nil or opts.elementwise_affine and true or false
  if self.elementwise_affine then
    self.weight = Parameter(sizes.make(torch.ones, shape, opts.device, opts.dtype))
    if opts.bias == nil or opts.bias then
      self.bias = Parameter(sizes.make(torch.zeros, shape, opts.device, opts.dtype))
    end
  end
end

function LayerNorm:reset_parameters()
  if self.elementwise_affine then
    torch.no_grad(function()
      self.weight:fill_(1)
      if self.bias ~= nil then self.bias:zero_() end
    end)
  end
end

function LayerNorm:forward(x)
  base.check_device(self, x, { "weight", "bias" })
  return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
end

function LayerNorm:extra_repr()
  return ("%s, eps=%s, elementwise_affine=%s"):format(sizes.tuple_str(self.normalized_shape), py_number(self.eps),
    py_bool(self.elementwise_affine))
end

-- nn.utils.clip_grad_norm_(parameters, max_norm[, norm_type = 2[,
-- {error_if_nonfinite = false}]]): scales every gradient by
-- max_norm / (total norm + 1e-6) when that is below 1, as PyTorch; returns
-- the total norm (a 0-d tensor on the first gradient's device). The total
-- is computed on the devices without reading it back, so it does not wait
-- (unless error_if_nonfinite asks). Reached as nn.utils.clip_grad_norm_.
S.utils = {}
function S.utils.clip_grad_norm_(parameters, max_norm, norm_type, opts)
  if type(norm_type) == "table" then opts, norm_type = norm_type, norm_type.norm_type end
  opts = errors.options(opts, "clip_grad_norm_")
  check_options(opts, "clip_grad_norm_", { "norm_type", "error_if_nonfinite" })
  norm_type = norm_type or opts.norm_type or 2
  if type(max_norm) ~= "number" or type(norm_type) ~= "number" then
    fail("clip_grad_norm_(parameters, max_norm[, norm_type]): max_norm and norm_type must be numbers, got "
      .. describe(max_norm) .. " and " .. describe(norm_type))
  end
  if torch.is_tensor(parameters) then parameters = { parameters } end
  if type(parameters) ~= "table" then
    fail("clip_grad_norm_: parameters must be a tensor or a list of tensors (net:parameters()), got " .. describe(parameters))
  end
  local grads = {}
  for i, p in ipairs(parameters) do
    if not torch.is_tensor(p) then fail(("clip_grad_norm_: parameters[%d] is %s, not a tensor"):format(i, describe(p))) end
    if p.grad ~= nil then grads[#grads + 1] = p.grad end
  end
  if #grads == 0 then return torch.tensor(0.0) end
  local dev = grads[1].device
  local total
  torch.no_grad(function()
    local norms = {}
    for i, g in ipairs(grads) do
      norms[i] = (norm_type == math.huge and g:abs():max() or g:norm(norm_type)):to(dev)
    end
    if norm_type == math.huge then total = #norms == 1 and norms[1] or torch.stack(norms):max()
    else total = torch.stack(norms):norm(norm_type) end
    if opts.error_if_nonfinite and not (total - total):eq(0):item() then
      fail(("The total norm of order %s for gradients from `parameters` is non-finite, so it cannot be clipped. To "
        .. "disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
        :format(py_number(norm_type + 0.0)))
    end
    local coef = (max_norm / (total + 1e-6)):clamp(nil, 1.0)
    for _, g in ipairs(grads) do g:mul_(coef:to(g.device)) end
  end)
  return total
end

return S
