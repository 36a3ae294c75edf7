-- torch.nn.functional (the book's F): the layers as plain functions of
-- their inputs and weights, as PyTorch's torch.nn.functional. Modules are
-- built on these (nn.Conv2d calls F.conv2d with its own weight), so a
-- module and its functional form give the same numbers.
--
-- Dims are 1-based as everywhere in gshell (F.softmax(x, 2) normalises
-- rows); options are a trailing table.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local check_tensor = require("torch.utils.errors").check_tensor
local loss = require("torch.nn.loss")

local F = {}

-- ----------------------------------------------------------- activations

-- relu(x[, {inplace = false}]); inplace may also be given as a boolean.
function F.relu(x, opts)
  check_tensor(x, "input", "relu")
  local inplace = opts
  if type(opts) == "table" then check_options(opts, "relu", { "inplace" }); inplace = opts.inplace end
  if inplace then return x:relu_() end
  return x:relu()
end

function F.sigmoid(x) check_tensor(x, "input", "sigmoid"); return x:sigmoid() end
function F.tanh(x) check_tensor(x, "input", "tanh"); return x:tanh() end

-- softmax(x, dim) / log_softmax(x, dim): dim (1-based) is required, or
-- given as {dim = d}.
for _, name in ipairs({ "softmax", "log_softmax" }) do
  F[name] = function(x, dim)
    check_tensor(x, "input", name)
    if type(dim) == "table" then check_options(dim, name, { "dim" }); dim = dim.dim end
    if math.type(dim) ~= "integer" then
      fail(string.format("%s(x, dim): the dimension to normalise over is required, a 1-based integer such as 2 "
        .. "for the rows of a matrix, got %s", name, dim == nil and "nothing" or tostring(dim)))
    end
    return x[name](x, dim)
  end
end

-- dropout(x[, p = 0.5[, {training = true, inplace = false}]]). As in
-- PyTorch the functional form drops in training mode unless told
-- otherwise: inside a module pass {training = self.training}. training
-- may also be given as a boolean, F.dropout(x, 0.5, self.training).
-- The first option table may replace p: F.dropout(x, {p = 0.2, training = false}).
function F.dropout(x, p, opts)
  check_tensor(x, "input", "dropout")
  if type(p) == "table" then opts, p = p, p.p end
  local training, inplace = true, false
  if type(opts) == "boolean" then
    training = opts
  elseif type(opts) == "table" then
    check_options(opts, "dropout", { "p", "training", "inplace" })
    if opts.training ~= nil then training = opts.training and true or false end
    inplace = opts.inplace and true or false
  elseif opts ~= nil then
    fail("dropout(x, p, options): options must be a table such as {training = false} or a boolean, got " .. type(opts))
  end
  if p == nil then p = 0.5 end
  if type(p) ~= "number" or not (p >= 0 and p <= 1) then
    fail("dropout probability has to be between 0 and 1, but got " .. tostring(p))
  end
  if not training or p == 0 then return x end
  if p == 1 then return inplace and x:zero_() or x * 0 end
  local keep = torch.rand_like(x):ge(p):to(x.dtype):div_(1 - p)
  if inplace then return x:mul_(keep) end
  return x * keep
end

-- ---------------------------------------------------------------- linear

-- linear(x, w[, b]): x w^T + b, w of shape [out, in].
function F.linear(x, w, b)
  check_tensor(x, "input", "linear")
  check_tensor(w, "weight", "linear")
  if b ~= nil then check_tensor(b, "bias", "linear") end
  if b ~= nil and x:dim() == 2 then return torch.addmm(b, x, w:t()) end
  local out = x:matmul(w:t())
  if b ~= nil then out = out + b end
  return out
end

-- ---------------------------------------------------------------- losses

-- cross_entropy(input, target[, {reduction = "mean"}]) and
-- mse_loss(input, target[, {reduction = "mean"}]): nn.CrossEntropyLoss's
-- and nn.MSELoss's computations (loss.lua).
F.cross_entropy = loss.functional.cross_entropy
F.mse_loss = loss.functional.mse_loss

-- ------------------------------------------- convolution, pooling, norms

-- conv2d and conv1d (functional_conv.lua); max_pool2d, avg_pool2d,
-- adaptive_avg_pool2d, adaptive_max_pool2d, batch_norm, pad and
-- interpolate (functional_pool.lua). Each file returns a table of
-- functions; both are merged here.
-- The convolution and pooling families keep their functional forms in
-- files of their own; a name defined twice is a mistake, said at load.
for _, name in ipairs({ "torch.nn.functional_conv", "torch.nn.functional_pool", "torch.nn.functional_seq" }) do
  for k, v in pairs(require(name)) do
    if F[k] ~= nil then fail("nn.functional: " .. name .. " defines " .. k .. " twice") end
    F[k] = v
  end
end

return F
