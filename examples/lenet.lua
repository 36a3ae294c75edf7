-- examples/lenet.lua: Dive into Deep Learning, 7.6 "Convolutional Neural
-- Networks (LeNet)": the book's LeNet (sigmoid activations, average
-- pooling), each layer's output shape, then d2l.train_ch6 on Fashion-MNIST
-- with the book's hyper-parameters (batch 256, lr 0.9) on d2l.try_gpu().
--
--   build/gshell --sim-gpus 2 examples/lenet.lua [epochs]   (cuda:0 is simulated; 10: the book's run)
--   build/gshell examples/lenet.lua [epochs]                (no GPU: the cpu)
--   GSHELL_EXAMPLE_QUICK=1 build/gshell examples/lenet.lua  (the specs' short mode)
--
-- The book's full run is 10 epochs over all 60000 training images, tested
-- on the 10000 test images: `lenet.lua 10`, 6.5 to 9.5 minutes here (see
-- below). REDUCED: the default is 3 epochs over all the data (about 2
-- minutes on a simulated GPU here; its test accuracy after 3 epochs is the
-- third point of the full run's, 0.657). The short mode trains 1 epoch on
-- the first 1024 training images and tests on the first 512 (a few
-- seconds).
--
-- MEASURED here, the book's full run (`lenet.lua 10`: 10 epochs, all the
-- data), on a 2-core machine shared with other jobs (load average about
-- 12), so slower than it would be alone:
--   on 2 simulated GPUs (cuda:0 computes on one core's share):
--     loss 0.470, train acc 0.823, test acc 0.791
--     1686.2 examples/sec on cuda:0
--     391 s in all: about 36 s an epoch, training and testing
--   (the book: loss 0.469, train acc 0.823, test acc 0.779,
--    55296.6 examples/sec on cuda:0)
--   (measured before simulated GPUs modelled real ones: this machine's
--   rate. On the default V100 model the line is that GPU's, about 214,000
--   examples/sec (modelled on a Tesla V100-SXM2-16GB): LeNet's step is
--   mostly the host's work; docs/book-numbers.md)
--   on the cpu device (no GPU; a sanitizer build ran beside it for part
--   of the time):
--     loss 0.470, train acc 0.823, test acc 0.791 (the same numbers: the
--     same seed and the same kernels on both)
--     1159.6 examples/sec on cpu
--     565 s in all: about 56 s an epoch, training and testing
torch = torch or require("torch")
nn = nn or torch.nn
d2l = d2l or require("d2l")

local QUICK = os.getenv("GSHELL_EXAMPLE_QUICK") == "1" or (arg and arg[1] == "quick")

-- The loader's data set cut to its first n samples (the short mode).
local function first_samples(loader, n)
  local ds = loader.dataset
  n = math.min(n, ds.data:size(1))
  ds.data, ds.targets = ds.data:narrow(1, 1, n), ds.targets:narrow(1, 1, n)
  return loader
end

-- %% the model
local net = nn.Sequential(
  nn.Conv2d(1, 6, 5, { padding = 2 }), nn.Sigmoid(),
  nn.AvgPool2d(2, { stride = 2 }),
  nn.Conv2d(6, 16, 5), nn.Sigmoid(),
  nn.AvgPool2d(2, { stride = 2 }),
  nn.Flatten(),
  nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(),
  nn.Linear(120, 84), nn.Sigmoid(),
  nn.Linear(84, 10))

-- %% each layer's output shape (the book's loop over the layers)
local X = torch.rand(1, 1, 28, 28, { dtype = torch.float32 })
for _, layer in ipairs(net:children()) do
  X = layer(X)
  print(string.format("%-12s output shape: \t%s", layer:_get_name(), tostring(X.shape)))
end

-- %% training
local batch_size = 256
local train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size)
local lr, num_epochs = 0.9, tonumber(arg and arg[1]) or 3
if QUICK then
  first_samples(train_iter, 1024)
  first_samples(test_iter, 512)
  num_epochs = 1
end
torch.manual_seed(0)
d2l.train_ch6(net, train_iter, test_iter, math.tointeger(num_epochs), lr, d2l.try_gpu())
