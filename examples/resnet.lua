-- examples/resnet.lua: Dive into Deep Learning, 8.6 "Residual Networks
-- (ResNet)": the Residual block (two 3x3 convolutions with batch norm, and
-- a 1x1 convolution on the shortcut when the shape changes), the modules
-- b1 (7x7 convolution, max-pooling) to b5, global average pooling and a
-- linear layer; each block's output shape for a 224x224 input, then
-- d2l.train_ch6 on Fashion-MNIST resized to 96x96 (resize = 96) on
-- d2l.try_gpu(), with the book's lr 0.05 and batch 256.
--
--   build/gshell --sim-gpus 2 examples/resnet.lua [train images] [epochs]
--   build/gshell examples/resnet.lua                      (no GPU: the cpu)
--   GSHELL_EXAMPLE_QUICK=1 build/gshell examples/resnet.lua  (the specs' short mode)
--
-- REDUCED: the book trains 10 epochs on all 60000 images (about 2 GFLOPs
-- of forward and backward work per 96x96 image: hours on this machine's
-- CPU). The default here is 1 epoch on the first 512 training images,
-- batch 64, tested on the first 256 test images: it shows the network
-- runs and learns a little, not the book's accuracy. The short mode takes
-- 16 training and 16 test images, batch 8, and checks each shape on a
-- 96x96 input instead of 224x224.
--
-- MEASURED here, the default run (1 epoch on 512 images, batch 64) on 2
-- simulated GPUs, 80 s in all on a 2-core machine shared with other jobs:
--   loss 2.653, train acc 0.275, test acc 0.156
--   7.6 examples/sec on cuda:0
-- (8 steps, far from the book's 10 epochs over all the data: the test
-- accuracy is still near one class in ten).
-- (These rates were measured before simulated GPUs modelled real ones:
-- they are this machine's. On the default V100 model the rate line is that
-- GPU's and says so, "(modelled on a Tesla V100-SXM2-16GB)";
-- docs/book-numbers.md compares it with the book's.)
torch = torch or require("torch")
nn = nn or torch.nn
d2l = d2l or require("d2l")

local QUICK = os.getenv("GSHELL_EXAMPLE_QUICK") == "1" or (arg and arg[1] == "quick")
local n_train = math.tointeger(tonumber(arg and arg[1]) or 512)
local num_epochs = math.tointeger(tonumber(arg and arg[2]) or 1)
local n_test, batch_size, shape_side = 256, 64, 224
if QUICK then n_train, n_test, batch_size, num_epochs, shape_side = 16, 16, 8, 1, 96 end

local function first_samples(loader, n)
  local ds = loader.dataset
  n = math.min(n, ds.data:size(1))
  ds.data, ds.targets = ds.data:narrow(1, 1, n), ds.targets:narrow(1, 1, n)
  return loader
end

-- %% the residual block
local Residual = nn.Module:extend("Residual")

-- Residual(input_channels, num_channels[, {use_1x1conv =, strides =}])
function Residual:init(input_channels, num_channels, opts)
  opts = opts or {}
  local strides = opts.strides or 1
  self.conv1 = nn.Conv2d(input_channels, num_channels, 3, { padding = 1, stride = strides })
  self.conv2 = nn.Conv2d(num_channels, num_channels, 3, { padding = 1 })
  if opts.use_1x1conv then
    -- the shortcut changes the channels and the size to match the output
    self.conv3 = nn.Conv2d(input_channels, num_channels, 1, { stride = strides })
  end
  self.bn1 = nn.BatchNorm2d(num_channels)
  self.bn2 = nn.BatchNorm2d(num_channels)
end

function Residual:forward(X)
  local Y = nn.functional.relu(self.bn1(self.conv1(X)))
  Y = self.bn2(self.conv2(Y))
  if self.conv3 then X = self.conv3(X) end
  return nn.functional.relu(Y + X)
end

-- The book's two checks: the same shape, or half the size and more channels.
do
  local X = torch.rand(4, 3, 6, 6)
  print("Residual(3, 3):", Residual(3, 3)(X).shape)
  print("Residual(3, 6, use_1x1conv, strides 2):", Residual(3, 6, { use_1x1conv = true, strides = 2 })(X).shape)
end

-- %% the ResNet model
local b1 = nn.Sequential(nn.Conv2d(1, 64, 7, { stride = 2, padding = 3 }),
  nn.BatchNorm2d(64), nn.ReLU(),
  nn.MaxPool2d(3, { stride = 2, padding = 1 }))

local function resnet_block(input_channels, num_channels, num_residuals, first_block)
  local blk = {}
  for i = 1, num_residuals do
    if i == 1 and not first_block then
      blk[#blk + 1] = Residual(input_channels, num_channels, { use_1x1conv = true, strides = 2 })
    else
      blk[#blk + 1] = Residual(num_channels, num_channels)
    end
  end
  return blk
end

local b2 = nn.Sequential(table.unpack(resnet_block(64, 64, 2, true)))
local b3 = nn.Sequential(table.unpack(resnet_block(64, 128, 2)))
local b4 = nn.Sequential(table.unpack(resnet_block(128, 256, 2)))
local b5 = nn.Sequential(table.unpack(resnet_block(256, 512, 2)))

local net = nn.Sequential(b1, b2, b3, b4, b5,
  nn.AdaptiveAvgPool2d({ 1, 1 }),
  nn.Flatten(), nn.Linear(512, 10))

-- %% each module's output shape
do
  local g <close> = torch.no_grad()
  local X = torch.rand(1, 1, shape_side, shape_side)
  for _, layer in ipairs(net:children()) do
    X = layer(X)
    print(string.format("%-18s output shape:\t%s", layer:_get_name(), tostring(X.shape)))
  end
end

-- %% training on Fashion-MNIST at 96x96
local lr = 0.05
local train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size, 96)
first_samples(train_iter, n_train)
first_samples(test_iter, n_test)
torch.manual_seed(0)
d2l.train_ch6(net, train_iter, test_iter, num_epochs, lr, d2l.try_gpu())
