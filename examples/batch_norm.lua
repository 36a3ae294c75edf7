-- examples/batch_norm.lua: Dive into Deep Learning, 8.5 "Batch
-- Normalization": the book's batch_norm function and BatchNorm module
-- (learned scale gamma and shift beta, moving mean and variance) written
-- in Lua, put into LeNet after each convolution and linear layer, then the
-- concise version with nn.BatchNorm2d / nn.BatchNorm1d; both trained with
-- d2l.train_ch6 on Fashion-MNIST on d2l.try_gpu() with the book's lr 1.0
-- and batch 256.
--
--   build/gshell --sim-gpus 2 examples/batch_norm.lua [epochs] [train images]
--   build/gshell examples/batch_norm.lua                   (no GPU: the cpu)
--   GSHELL_EXAMPLE_QUICK=1 build/gshell examples/batch_norm.lua  (the specs' short mode)
--
-- REDUCED: the book trains each net 10 epochs on all 60000 images; here
-- the default is 2 epochs on the first 10000 training images (the full
-- 10000 test images), each net. The short mode: 1 epoch, 512 training and
-- 256 test images.
--
-- MEASURED here, the default run (2 epochs, 10000 training images, all
-- 10000 test images) on 2 simulated GPUs, 29 s in all on a 2-core machine
-- shared with other jobs:
--   from scratch vs nn.BatchNorm2d: outputs differ by 2.4e-07, moving means by 1.5e-08
--   from scratch: loss 0.968, train acc 0.659, test acc 0.618
--                 1419.1 examples/sec on cuda:0
--   concise:      loss 0.968, train acc 0.659, test acc 0.618
--                 2459.3 examples/sec on cuda:0
-- (These rates were measured before simulated GPUs modelled real ones:
-- they are this machine's. On the default V100 model the rate line is that
-- GPU's and says so, "(modelled on a Tesla V100-SXM2-16GB)";
-- docs/book-numbers.md compares it with the book's.)
-- (the same seed gives both nets the same start and batches; they differ
-- in rounding, and in the moving variance: the book's is the biased one,
-- PyTorch's the unbiased one). After the first epoch the test accuracy is
-- still 0.11 while the training accuracy is 0.56: with lr 1.0 the weights
-- move faster than the moving averages follow.
torch = torch or require("torch")
nn = nn or torch.nn
d2l = d2l or require("d2l")

local QUICK = os.getenv("GSHELL_EXAMPLE_QUICK") == "1" or (arg and arg[1] == "quick")
local num_epochs = math.tointeger(tonumber(arg and arg[1]) or 2)
local n_train, n_test = math.tointeger(tonumber(arg and arg[2]) or 10000), 10000
if QUICK then num_epochs, n_train, n_test = 1, 512, 256 end

local function first_samples(loader, n)
  local ds = loader.dataset
  n = math.min(n, ds.data:size(1))
  ds.data, ds.targets = ds.data:narrow(1, 1, n), ds.targets:narrow(1, 1, n)
  return loader
end

-- %% batch normalisation from scratch
-- In training (gradients recorded) the batch's own mean and variance
-- normalise X and the moving averages take a step towards them; in
-- prediction (torch.no_grad, as evaluate_accuracy_gpu runs) the moving
-- averages normalise. The statistics are per feature (2-D input: over the
-- batch) or per channel (4-D input: over the batch, height and width).
local function batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum)
  local X_hat, mean, var
  if not torch.is_grad_enabled() then
    X_hat = (X - moving_mean) / (moving_var + eps):sqrt()
  else
    assert(X:dim() == 2 or X:dim() == 4, "batch_norm: expected a 2-D or 4-D input")
    if X:dim() == 2 then
      mean = X:mean(1)
      var = ((X - mean) ^ 2):mean(1)
    else
      mean = X:mean({ 1, 3, 4 }, true)
      var = ((X - mean) ^ 2):mean({ 1, 3, 4 }, true)
    end
    X_hat = (X - mean) / (var + eps):sqrt()
    -- the moving statistics are data, not part of the graph (the book's .data)
    moving_mean = (momentum * moving_mean + (1.0 - momentum) * mean):detach()
    moving_var = (momentum * moving_var + (1.0 - momentum) * var):detach()
  end
  local Y = gamma * X_hat + beta
  return Y, moving_mean, moving_var
end

local BatchNorm = nn.Module:extend("BatchNorm")

-- num_features: outputs of a linear layer or channels of a convolution;
-- num_dims: 2 after a linear layer, 4 after a convolution.
function BatchNorm:init(num_features, num_dims)
  local shape = num_dims == 2 and { 1, num_features } or { 1, num_features, 1, 1 }
  self.gamma = nn.Parameter(torch.ones(shape))   -- learned scale, starts at 1
  self.beta = nn.Parameter(torch.zeros(shape))   -- learned shift, starts at 0
  -- plain tensors, not parameters: forward moves them to X's device itself
  self.moving_mean = torch.zeros(shape)
  self.moving_var = torch.ones(shape)
end

function BatchNorm:forward(X)
  if self.moving_mean.device ~= X.device then
    self.moving_mean = self.moving_mean:to(X.device)
    self.moving_var = self.moving_var:to(X.device)
  end
  local Y
  Y, self.moving_mean, self.moving_var = batch_norm(X, self.gamma, self.beta, self.moving_mean, self.moving_var,
    1e-5, 0.9)
  return Y
end

-- The hand-written layer against nn.BatchNorm2d on the same batch: in
-- training both normalise with the batch's statistics (the same output),
-- and both move their averages 10% of the way (the book's momentum 0.9 is
-- PyTorch's 0.1); PyTorch's running variance is the unbiased one.
do
  torch.manual_seed(1)
  local X = torch.randn(8, 3, 5, 5) * 2 + 1
  local mine, theirs = BatchNorm(3, 4), nn.BatchNorm2d(3)
  local diff = (mine(X) - theirs(X)):abs():max():item()
  local mean_diff = (mine.moving_mean:reshape(-1) - theirs.running_mean):abs():max():item()
  print(string.format("from scratch vs nn.BatchNorm2d: outputs differ by %.1e, moving means by %.1e",
    diff, mean_diff))
  assert(diff < 1e-5 and mean_diff < 1e-6, "the hand-written batch norm differs from nn.BatchNorm2d")
end

local lr, batch_size = 1.0, 256
local function data()
  local train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size)
  return first_samples(train_iter, n_train), first_samples(test_iter, n_test)
end

-- %% LeNet with the hand-written batch norm
torch.manual_seed(0)
local net = nn.Sequential(
  nn.Conv2d(1, 6, 5), BatchNorm(6, 4), nn.Sigmoid(),
  nn.AvgPool2d(2, { stride = 2 }),
  nn.Conv2d(6, 16, 5), BatchNorm(16, 4), nn.Sigmoid(),
  nn.AvgPool2d(2, { stride = 2 }), nn.Flatten(),
  nn.Linear(16 * 4 * 4, 120), BatchNorm(120, 2), nn.Sigmoid(),
  nn.Linear(120, 84), BatchNorm(84, 2), nn.Sigmoid(),
  nn.Linear(84, 10))
print("-- LeNet with batch norm from scratch")
local train_iter, test_iter = data()
d2l.train_ch6(net, train_iter, test_iter, num_epochs, lr, d2l.try_gpu())

-- the scale and shift the first batch norm layer learned
print("gamma:", net[2].gamma:reshape(-1))
print("beta: ", net[2].beta:reshape(-1))

-- %% the concise version: nn.BatchNorm2d after convolutions, nn.BatchNorm1d after linear layers
torch.manual_seed(0)
local concise = nn.Sequential(
  nn.Conv2d(1, 6, 5), nn.BatchNorm2d(6), nn.Sigmoid(),
  nn.AvgPool2d(2, { stride = 2 }),
  nn.Conv2d(6, 16, 5), nn.BatchNorm2d(16), nn.Sigmoid(),
  nn.AvgPool2d(2, { stride = 2 }), nn.Flatten(),
  nn.Linear(256, 120), nn.BatchNorm1d(120), nn.Sigmoid(),
  nn.Linear(120, 84), nn.BatchNorm1d(84), nn.Sigmoid(),
  nn.Linear(84, 10))
print("-- LeNet with nn.BatchNorm2d and nn.BatchNorm1d")
train_iter, test_iter = data()
d2l.train_ch6(concise, train_iter, test_iter, num_epochs, lr, d2l.try_gpu())
