-- torch.d2l.resnet: the book's Residual block and the ResNet-18 of its
-- multi-GPU chapter (a 3x3 first convolution and no max-pooling, for
-- 28x28 Fashion-MNIST input). Needs nn.Conv2d, nn.BatchNorm2d and
-- nn.AdaptiveAvgPool2d (the convolutional-networks layers).
local torch = require("torch")
local fail = require("torch.utils.errors").fail

local M = {}

local function need(name)
  local nn = torch.nn
  if nn[name] == nil then
    fail("d2l.resnet18 needs nn." .. name .. ", which this build of gshell does not have yet")
  end
  return nn[name]
end

local Residual

-- Residual(input_channels, num_channels[, {use_1x1conv = false, strides = 1}])
local function residual_class()
  if Residual then return Residual end
  local nn = torch.nn
  Residual = nn.Module:extend("Residual")
  function Residual:init(input_channels, num_channels, opts)
    opts = opts or {}
    local Conv2d, BatchNorm2d = need("Conv2d"), need("BatchNorm2d")
    local strides = opts.strides or 1
    self.conv1 = Conv2d(input_channels, num_channels, 3, { padding = 1, stride = strides })
    self.conv2 = Conv2d(num_channels, num_channels, 3, { padding = 1 })
    if opts.use_1x1conv then
      self.conv3 = Conv2d(input_channels, num_channels, 1, { stride = strides })
    end
    self.bn1 = BatchNorm2d(num_channels)
    self.bn2 = BatchNorm2d(num_channels)
  end
  function Residual:forward(X)
    local Y = self.bn1(self.conv1(X)):relu()
    Y = self.bn2(self.conv2(Y))
    if self.conv3 then X = self.conv3(X) end
    return (Y + X):relu()
  end
  return Residual
end

function M.Residual(...)
  return residual_class()(...)
end

-- resnet18(num_classes[, in_channels = 1])
function M.resnet18(num_classes, in_channels)
  in_channels = in_channels or 1
  if math.type(num_classes) ~= "integer" or num_classes < 1 then
    fail("d2l.resnet18(num_classes[, in_channels]): num_classes must be a positive integer")
  end
  local nn = torch.nn
  local R = residual_class()
  local function resnet_block(cin, cout, num_residuals, first_block)
    local blk = {}
    for i = 1, num_residuals do
      if i == 1 and not first_block then
        blk[#blk + 1] = R(cin, cout, { use_1x1conv = true, strides = 2 })
      else
        blk[#blk + 1] = R(cout, cout)
      end
    end
    return nn.Sequential(table.unpack(blk))
  end
  local net = nn.Sequential(need("Conv2d")(in_channels, 64, 3, { stride = 1, padding = 1 }),
    need("BatchNorm2d")(64), nn.ReLU())
  net:add_module("resnet_block1", resnet_block(64, 64, 2, true))
  net:add_module("resnet_block2", resnet_block(64, 128, 2))
  net:add_module("resnet_block3", resnet_block(128, 256, 2))
  net:add_module("resnet_block4", resnet_block(256, 512, 2))
  net:add_module("global_avg_pool", need("AdaptiveAvgPool2d")({ 1, 1 }))
  net:add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(512, num_classes)))
  return net
end

return M
