-- torch.nn.lazy: nn.LazyLinear and nn.LazyConv2d, whose input size is
-- taken from the first call (the English edition of the book uses them).
--
-- Until then the weight is an empty placeholder parameter (shape [out, 0]
-- or [out, 0, kH, kW]) and the module prints with in_features=0 as
-- PyTorch's does. The first call gives the placeholder its real storage
-- on the input's device (p.data = ..., so the tensor object stays the
-- one an optimizer may already hold), initialises it as the eager layer
-- would, and turns the module into that layer (PyTorch's
-- cls_to_become): afterwards it is a Linear / Conv2d in every respect.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_tensor = require("torch.utils.errors").check_tensor
local errors = require("torch.utils.errors")
local layers = require("torch.nn.layers")
local conv = require("torch.nn.conv")

local Z = {}

-- Gives the placeholder weight its shape on the input's device, keeping
-- its dtype (net:to(torch.float64) before the first call counts).
local function materialise(self, shape, input)
  local w = self.weight
  torch.no_grad(function()
    w.data = torch.empty(shape, { device = input.device, dtype = w.dtype })
    if self.bias ~= nil and self.bias.device ~= input.device then self.bias.data = self.bias.data:to(input.device) end
  end)
end

-- nn.LazyLinear(out_features[, {bias = true, device =, dtype =}]).
local LazyLinear = layers.Linear:extend("LazyLinear")
Z.LazyLinear = LazyLinear

function LazyLinear:init(out_features, opts)
  if math.type(out_features) ~= "integer" or out_features < 0 then
    fail("nn.LazyLinear(out_features[, options]): out_features must be a non-negative integer, got "
      .. errors.describe(out_features))
  end
  layers.Linear.init(self, 0, out_features, opts)
end

-- PyTorch's LazyModuleMixin: nothing to initialise while uninitialised.
function LazyLinear:reset_parameters()
  if self.in_features ~= 0 then layers.Linear.reset_parameters(self) end
end

function LazyLinear:forward(input)
  check_tensor(input, "input", "LazyLinear")
  if input:dim() == 0 then fail("LazyLinear: expected an input with at least 1 dimension, got a scalar") end
  local in_features = input:size(input:dim())
  self.in_features = in_features
  materialise(self, { self.out_features, in_features }, input)
  setmetatable(self, layers.Linear)
  self:reset_parameters()
  return self:forward(input)
end

-- nn.LazyConv2d(out_channels, kernel_size[, options]): nn.Conv2d's
-- options; in_channels is the input's channel count (dim 2 of NCHW, 1 of CHW).
local LazyConv2d = conv.Conv2d:extend("LazyConv2d")
Z.LazyConv2d = LazyConv2d

function LazyConv2d:init(out_channels, kernel_size, opts)
  if math.type(out_channels) ~= "integer" or out_channels < 0 then
    fail("nn.LazyConv2d(out_channels, kernel_size[, options]): out_channels must be a non-negative integer, got "
      .. errors.describe(out_channels))
  end
  conv.Conv2d.init(self, 0, out_channels, kernel_size, opts)
end

function LazyConv2d:reset_parameters()
  if self.in_channels ~= 0 then conv.Conv2d.reset_parameters(self) end
end

function LazyConv2d:forward(input)
  check_tensor(input, "input", "LazyConv2d")
  if input:dim() ~= 3 and input:dim() ~= 4 then
    fail(string.format("LazyConv2d: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got %d-d %s", input:dim(),
      tostring(input.shape)))
  end
  local c = input:size(input:dim() - 2)
  if c % self.groups ~= 0 then
    fail(string.format("LazyConv2d: the input's %d channels are not divisible by groups=%d", c, self.groups))
  end
  self.in_channels = c
  local k = self.kernel_size
  materialise(self, { self.out_channels, c // self.groups, k[1], k[2] }, input)
  setmetatable(self, conv.Conv2d)
  self:reset_parameters()
  return self:forward(input)
end

return Z
