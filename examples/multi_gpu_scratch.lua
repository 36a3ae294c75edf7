-- examples/multi_gpu_scratch.lua: Dive into Deep Learning, 13.5
-- "Training on Multiple GPUs" (from scratch): a LeNet variant written with
-- nn.functional (F.conv2d, F.relu, F.avg_pool2d) and its parameters as
-- plain tensors; every device gets its own copy of them (get_params),
-- each minibatch is cut into one slice per device (split_batch), each
-- device computes the gradients of its slice, allreduce sums them so that
-- every copy takes the same SGD step (d2l.sgd). train(num_gpus,
-- batch_size, lr) trains on Fashion-MNIST and prints the book's closing
-- line, "test acc: 0.73, 124.7 sec/epoch on [cuda:0]" (the book prints
-- Python's str() of its list of devices; gshell writes a device cuda:0).
--
--   build/gshell --sim-gpus 2 examples/multi_gpu_scratch.lua [epochs] [train images]
--   build/gshell examples/multi_gpu_scratch.lua           (no GPU: the cpu)
--   GSHELL_EXAMPLE_QUICK=1 build/gshell examples/multi_gpu_scratch.lua  (the specs' short mode)
--
-- REDUCED: the book trains 10 epochs on all 60000 images, on one GPU then
-- on two. The default here is 2 epochs on all the data, each way (about 4
-- minutes each way here): the first epoch stays at chance (0.10; the
-- weights start at 0.01 times a normal sample, and the first few hundred
-- steps barely move the loss from 2.30), the second reaches about 0.67.
-- Fewer images make that start longer in epochs: `1 10000` (1 epoch of
-- the first 10000 images) ends at 0.10. The short mode: 1 epoch, 512
-- training and 256 test images.
--
-- MEASURED here, `multi_gpu_scratch.lua 3 60000` (3 epochs on all the
-- data, each way; the default's 2 epochs are its first two) on 2
-- simulated GPUs, 666 s in all on a 2-core machine shared with other jobs:
--   test accuracy by epoch 0.100, 0.671, 0.733 on one device, 0.100,
--   0.645, 0.743 on two;
--   test acc: 0.73, 124.7 sec/epoch on [cuda:0]
--   test acc: 0.74, 87.1 sec/epoch on [cuda:0, cuda:1]
-- (the book trains 10 epochs on real GPUs, and remarks that a model this
-- small gains little from a second GPU). Measured before simulated GPUs
-- modelled real ones: this machine's seconds; on the default V100 model
-- the line is the V100s' and says so.
torch = torch or require("torch")
nn = nn or torch.nn
d2l = d2l or require("d2l")
local F = nn.functional

local QUICK = os.getenv("GSHELL_EXAMPLE_QUICK") == "1" or (arg and arg[1] == "quick")
local num_epochs = math.tointeger(tonumber(arg and arg[1]) or 2)
local n_train, n_test = math.tointeger(tonumber(arg and arg[2]) or 60000), 10000
if QUICK then num_epochs, n_train, n_test = 1, 512, 256 end

local function first_samples(loader, n)
  local ds = loader.dataset
  n = math.min(n, ds.data:size(1))
  ds.data, ds.targets = ds.data:narrow(1, 1, n), ds.targets:narrow(1, 1, n)
  return loader
end

-- Python's str() of a list of devices, as the book prints it.
local function devices_str(devices)
  local parts = {}
  for i, d in ipairs(devices) do parts[i] = tostring(d) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

-- %% the model: parameters as tensors
torch.manual_seed(0)
local scale = 0.01
local W1 = torch.randn(20, 1, 3, 3) * scale
local b1 = torch.zeros(20)
local W2 = torch.randn(50, 20, 5, 5) * scale
local b2 = torch.zeros(50)
local W3 = torch.randn(800, 128) * scale
local b3 = torch.zeros(128)
local W4 = torch.randn(128, 10) * scale
local b4 = torch.zeros(10)
local params = { W1, b1, W2, b2, W3, b3, W4, b4 }

local function lenet(X, p)
  local h1_conv = F.conv2d(X, p[1], p[2])
  local h1_activation = F.relu(h1_conv)
  local h1 = F.avg_pool2d(h1_activation, { 2, 2 }, { stride = { 2, 2 } })
  local h2_conv = F.conv2d(h1, p[3], p[4])
  local h2_activation = F.relu(h2_conv)
  local h2 = F.avg_pool2d(h2_activation, { 2, 2 }, { stride = { 2, 2 } })
  h2 = h2:reshape(h2.shape[1], -1)
  local h3_linear = torch.mm(h2, p[5]) + p[6]
  local h3 = F.relu(h3_linear)
  return torch.mm(h3, p[7]) + p[8]
end

local loss = nn.CrossEntropyLoss({ reduction = "none" })

-- %% data synchronisation
-- A copy of the parameters on `device`, each a leaf that records its
-- gradient. The clone matters when the parameters already live on that
-- device: p:to(device) then gives back p itself (as in PyTorch), so
-- requires_grad_ would turn the master tensor into this device's leaf and
-- each in-place SGD step would move the master too (here the master
-- parameters are on the cpu, but a learner who moves them to cuda:0
-- first would meet it). A clone makes every copy its own tensor.
local function get_params(p, device)
  local new_params = {}
  for i, t in ipairs(p) do new_params[i] = t:to(device):clone() end
  for _, t in ipairs(new_params) do t:requires_grad_() end
  return new_params
end

local new_params = get_params(params, d2l.try_gpu(0))
print("b1 weight:", new_params[2])
print("b1 grad:", new_params[2].grad)

-- The sum of every device's tensor, written back into each. Both loops
-- must write in place (add_, copy_: the book's data[0][:] += ... and
-- data[i][:] = ...): `data[i] = data[1]:to(...)` would only rebind a
-- slot of the Lua list, and a device's .grad would keep its own partial
-- gradient. d2l.allreduce is this function.
local function allreduce(data)
  for i = 2, #data do data[1]:add_(data[i]:to(data[1].device)) end
  for i = 2, #data do data[i]:copy_(data[1]:to(data[i].device)) end
end

do
  local data = {}
  for i = 1, 2 do data[i] = torch.ones(1, 2, { device = d2l.try_gpu(i - 1) }) * i end
  print("before allreduce:\n", data[1], "\n", data[2])
  allreduce(data)
  print("after allreduce:\n", data[1], "\n", data[2])
  -- d2l's saved copy does the same
  local again = { torch.ones(1, 2, { device = d2l.try_gpu(0) }), torch.ones(1, 2, { device = d2l.try_gpu(1) }) * 2 }
  d2l.allreduce(again)
  assert(again[1]:equal(data[1]) and again[2]:equal(data[2]), "d2l.allreduce differs")
end

-- %% distributing data
-- The book's split_batch, saved in d2l as d2l.split_batch: X and y cut
-- into one slice per device, each on its device.
local split_batch = d2l.split_batch

do
  local data = torch.arange(20):reshape(4, 5)
  local devices = d2l.try_all_gpus()
  -- (comm.scatter wants CUDA devices; without a GPU split_batch cuts the same way)
  local split = devices[1].type == "cuda" and torch.cuda.comm.scatter(data, devices)
    or (split_batch(data, torch.arange(4), devices))
  print("input :", data)
  print("load into", devices_str(devices))
  print("output:", table.unpack(split))
end

-- %% training
local function train_batch(X, y, device_params, devices, lr)
  local X_shards, y_shards = split_batch(X, y, devices)
  -- the loss of each device's slice; each device's backward is queued on
  -- that device, so the devices compute at the same time
  local ls = {}
  for i = 1, #devices do ls[i] = loss(lenet(X_shards[i], device_params[i]), y_shards[i]):sum() end
  for _, l in ipairs(ls) do l:backward() end
  -- the gradients of each parameter, summed over the devices
  torch.no_grad(function()
    for i = 1, #device_params[1] do
      local grads = {}
      for c = 1, #devices do grads[c] = device_params[c][i].grad end
      allreduce(grads)
    end
  end)
  -- the same update on every device (the loss is a sum over the whole batch)
  for _, param in ipairs(device_params) do d2l.sgd(param, lr, X.shape[1]) end
end

local function sync_all()
  if torch.cuda.is_available() then torch.cuda.synchronize() end
end

local function train(num_gpus, batch_size, lr)
  local train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size)
  first_samples(train_iter, n_train)
  first_samples(test_iter, n_test)
  local devices = {}
  for i = 1, num_gpus do devices[i] = d2l.try_gpu(i - 1) end
  local device_params = {}
  for i, d in ipairs(devices) do device_params[i] = get_params(params, d) end
  local animator = d2l.Animator({ xlabel = "epoch", ylabel = "test acc", xlim = { 1, num_epochs }, legend = { "test acc" } })
  local timer = d2l.Timer()
  for epoch = 1, num_epochs do
    timer:start()
    for _, X, y in train_iter:enumerate() do
      train_batch(X, y, device_params, devices, lr)
      sync_all()
    end
    timer:stop()
    -- evaluate the copy on the first device
    animator:add(epoch, { d2l.evaluate_accuracy_gpu(function(x) return lenet(x, device_params[1]) end,
      test_iter, devices[1]) })
  end
  -- every copy took the same steps: they are still equal
  for c = 2, #devices do
    for i = 1, #params do
      assert(device_params[c][i]:to(devices[1]):equal(device_params[1][i]), "the copies drifted apart")
    end
  end
  -- on modelled GPUs the seconds are theirs (d2l.timing_note says which)
  print(string.format("test acc: %.2f, %.1f sec/epoch on %s%s", animator.Y[1][#animator.Y[1]], timer:avg(),
    devices_str(devices), d2l.timing_note(devices)))
end

-- On a machine without a GPU, try_gpu(0) and try_gpu(1) are both the cpu:
-- the second run then trains two copies on the cpu, which still shows the
-- algorithm (and that the copies stay equal).
train(1, 256, 0.2)
train(2, 256, 0.2)
