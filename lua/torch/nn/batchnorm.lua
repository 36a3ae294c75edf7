-- torch.nn.batchnorm: nn.BatchNorm2d and nn.BatchNorm1d, PyTorch's
-- _BatchNorm. The learnable weight (ones) and bias (zeros) are
-- parameters; running_mean (zeros), running_var (ones) and
-- num_batches_tracked (an int64 count) are buffers: state that moves with
-- the module and is saved in its state dict, but that no optimizer
-- touches. F.batch_norm updates the running statistics in place, which is
-- why DataParallel's replica on the first device (the module itself)
-- updates the original's.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local check_tensor = require("torch.utils.errors").check_tensor
local errors = require("torch.utils.errors")
local base = require("torch.nn.module")
local init = require("torch.nn.initializers")
local sizes = require("torch.nn.sizes")
local F = require("torch.nn.functional")

local Module, Parameter = base.Module, base.Parameter
local py_number, py_bool = base.py_number, base.py_bool

local B = {}

local OPTIONS = { "eps", "momentum", "affine", "track_running_stats", "device", "dtype" }

local function setup(self, who, num_features, opts)
  if math.type(num_features) ~= "integer" or num_features < 0 then
    fail(string.format("nn.%s(num_features[, options]): num_features must be a non-negative integer (the number "
      .. "of channels), got %s", who, errors.describe(num_features)))
  end
  if opts ~= nil and type(opts) ~= "table" then
    fail(string.format("nn.%s: options must be a table such as {momentum = 0.1}, got %s", who, errors.describe(opts)))
  end
  opts = opts or {}
  check_options(opts, "nn." .. who, OPTIONS)
  local eps = opts.eps == nil and 1e-5 or opts.eps
  if type(eps) ~= "number" then fail("nn." .. who .. ": eps must be a number, got " .. errors.describe(eps)) end
  -- momentum = false stands for PyTorch's None (Lua tables cannot hold
  -- nil): running statistics are then a cumulative average.
  local momentum = opts.momentum
  if momentum == nil then momentum = 0.1 elseif momentum == false then momentum = nil end
  if momentum ~= nil and type(momentum) ~= "number" then
    fail("nn." .. who .. ": momentum must be a number or false (a cumulative average), got " .. errors.describe(momentum))
  end
  self.num_features = num_features
  self.eps = eps
  self.momentum = momentum
  self.affine = opts.affine == nil or opts.affine and true or false
  self.track_running_stats = opts.track_running_stats == nil or opts.track_running_stats and true or false
  local dev, dt = opts.device, opts.dtype
  if self.affine then
    self.weight = Parameter(sizes.make(torch.empty, { num_features }, dev, dt))
    self.bias = Parameter(sizes.make(torch.empty, { num_features }, dev, dt))
  end
  if self.track_running_stats then
    self:register_buffer("running_mean", sizes.make(torch.zeros, { num_features }, dev, dt))
    self:register_buffer("running_var", sizes.make(torch.ones, { num_features }, dev, dt))
    -- an int64 count, as PyTorch's (a float would stop counting at 2^24)
    self:register_buffer("num_batches_tracked", sizes.make(torch.zeros, {}, dev, torch.int64))
  end
  self:reset_parameters()
end

local function reset_running_stats(self)
  if self.track_running_stats then
    torch.no_grad(function()
      self.running_mean:zero_()
      self.running_var:fill_(1)
      self.num_batches_tracked:zero_()
    end)
  end
end

local function reset_parameters(self)
  reset_running_stats(self)
  if self.affine then
    init.ones_(self.weight)
    init.zeros_(self.bias)
  end
end

local function extra_repr(self)
  return string.format("%d, eps=%s, momentum=%s, affine=%s, track_running_stats=%s", self.num_features,
    py_number(self.eps), self.momentum == nil and "None" or py_number(self.momentum), py_bool(self.affine),
    py_bool(self.track_running_stats))
end

-- PyTorch's _BatchNorm.forward: in training mode count the batch and use
-- the batch's statistics (updating the running ones with momentum, or
-- with 1/count when momentum is None); in eval mode use the running ones
-- (the batch's when the module tracks none).
local function forward(self, input)
  local factor = self.momentum or 0.0
  if self.training and self.track_running_stats then
    self.num_batches_tracked:add_(1)
    if self.momentum == nil then factor = 1.0 / self.num_batches_tracked:item() end
  end
  local use_batch = self.training or not self.track_running_stats
  return F.batch_norm(input, self.running_mean, self.running_var, { weight = self.weight, bias = self.bias,
    training = use_batch, momentum = factor, eps = self.eps })
end

local DEVICE_FIELDS = { "weight", "bias", "running_mean", "running_var" }

local function make(name, dims, dims_text)
  local cls = Module:extend(name)
  B[name] = cls
  function cls:init(num_features, opts) setup(self, name, num_features, opts) end
  cls.reset_parameters = reset_parameters
  cls.reset_running_stats = reset_running_stats
  cls.extra_repr = extra_repr
  function cls:forward(input)
    check_tensor(input, "input", name)
    if not dims[input:dim()] then
      fail(string.format("expected %s input (got %dD input)", dims_text, input:dim()))
    end
    base.check_device(self, input, DEVICE_FIELDS)
    return forward(self, input)
  end
  return cls
end

-- nn.BatchNorm2d(num_features[, {eps = 1e-5, momentum = 0.1, affine =
-- true, track_running_stats = true}]) over (N, C, H, W)...
make("BatchNorm2d", { [4] = true }, "4D")
-- ... and nn.BatchNorm1d over (N, C) or (N, C, L).
make("BatchNorm1d", { [2] = true, [3] = true }, "2D or 3D")

return B
