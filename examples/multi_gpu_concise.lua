-- examples/multi_gpu_concise.lua: Dive into Deep Learning, 13.6 "Concise
-- Implementation for Multiple GPUs": the chapter's ResNet-18
-- (d2l.resnet18(10, 1): a 3x3 first convolution, no max-pooling, for 28x28
-- images), wrapped in nn.DataParallel, which cuts each batch into one
-- slice per device, runs a replica of the net on each and gathers the
-- outputs on the first; the gradients flow back to the one set of
-- parameters there, so there is nothing to all-reduce by hand.
-- train(net, num_gpus, batch_size, lr) prints the book's closing line,
-- "test acc: 0.12, 44.7 sec/epoch on [cuda:0]" (gshell writes a device
-- cuda:0 where the book prints Python's str() of its list of devices).
--
--   build/gshell --sim-gpus 2 examples/multi_gpu_concise.lua [train images] [epochs]
--   build/gshell examples/multi_gpu_concise.lua           (no GPU: the cpu)
--   GSHELL_EXAMPLE_QUICK=1 build/gshell examples/multi_gpu_concise.lua  (the specs' short mode)
--
-- REDUCED: the book trains 10 epochs on all 60000 images, with batch 256
-- on one GPU and 512 on two (ResNet-18 at 28x28 is about 3 GFLOPs of
-- forward and backward work per image: hours on this machine). The
-- default here is 1 epoch on the first 256 training images, tested on the
-- first 128, with batch 32 on one device and 64 on two (the book's ratio,
-- and its lr 0.1 and 0.2). The short mode: 4 training and 4 test images,
-- batch 2 and 4 (most of its time goes to initialising the 11 million
-- weights, twice).
--
-- MEASURED here, the default run on 2 simulated GPUs, 121 s in all on a
-- 2-core machine shared with other jobs (load average about 12):
--   test acc: 0.12, 44.7 sec/epoch on [cuda:0]
--   test acc: 0.09, 56.7 sec/epoch on [cuda:0, cuda:1]
-- (8 and 4 steps: no learning to speak of, unlike the book's 10 epochs
-- over all the data.) These were measured before simulated GPUs modelled
-- real ones: two simulated GPUs were slower than one then, each computing
-- on a share of the same two cores. On the default V100 model the
-- sec/epoch are the V100s' (the line says so): each GPU computes its half
-- of the batch at a V100's rate, beside the copies of the 11 million
-- parameters to the second device (DataParallel's replicate) and the
-- batch's split and gather (docs/book-numbers.md: why ResNet gains from
-- two GPUs and LeNet little).
torch = torch or require("torch")
nn = nn or torch.nn
d2l = d2l or require("d2l")

local QUICK = os.getenv("GSHELL_EXAMPLE_QUICK") == "1" or (arg and arg[1] == "quick")
local n_train = math.tointeger(tonumber(arg and arg[1]) or 256)
local num_epochs = math.tointeger(tonumber(arg and arg[2]) or 1)
local n_test, batch_size = 128, 32
if QUICK then n_train, n_test, num_epochs, batch_size = 4, 4, 1, 2 end

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

-- %% the network
torch.manual_seed(0)
local net = d2l.resnet18(10, 1)
local devices = d2l.try_all_gpus()
print(string.format("ResNet-18: %d parameter tensors; devices: %s", #net:parameters(), devices_str(devices)))

-- %% training
local function train(model, num_gpus, bs, lr)
  local train_iter, test_iter = d2l.load_data_fashion_mnist(bs)
  first_samples(train_iter, n_train)
  first_samples(test_iter, n_test)
  local devs = {}
  for i = 1, num_gpus do devs[i] = d2l.try_gpu(i - 1) end
  local function init_weights(m)
    if m:isinstance(nn.Linear) or m:isinstance(nn.Conv2d) then nn.init.normal_(m.weight, 0, 0.01) end
  end
  model:apply(init_weights)
  -- DataParallel keeps the parameters on its first device (PyTorch's
  -- rule too): move them there before wrapping
  model:to(devs[1])
  -- on a machine without a GPU DataParallel simply calls the net on the cpu
  local ids = {}
  for i, d in ipairs(devs) do if d.type == "cuda" then ids[#ids + 1] = d end end
  local dp = nn.DataParallel(model, #ids > 0 and { device_ids = ids } or nil)
  local trainer = torch.optim.SGD(dp:parameters(), { lr = lr })
  local loss = nn.CrossEntropyLoss()
  local timer = d2l.Timer()
  local animator = d2l.Animator({ xlabel = "epoch", ylabel = "test acc", xlim = { 1, num_epochs }, legend = { "test acc" } })
  for epoch = 1, num_epochs do
    dp:train()
    timer:start()
    for _, X, y in train_iter:enumerate() do
      trainer:zero_grad()
      X, y = X:to(devs[1]), y:to(devs[1])
      local l = loss(dp(X), y)
      l:backward()
      trainer:step()
    end
    if torch.cuda.is_available() then torch.cuda.synchronize() end
    timer:stop()
    animator:add(epoch, { d2l.evaluate_accuracy_gpu(dp, test_iter) })
  end
  -- on modelled GPUs the seconds are theirs (d2l.timing_note says which)
  print(string.format("test acc: %.2f, %.1f sec/epoch on %s%s", animator.Y[1][#animator.Y[1]], timer:avg(),
    devices_str(devs), d2l.timing_note(devs)))
end

-- the book's two runs: one device, then two with twice the batch and lr
-- (without a GPU both run on the cpu)
train(net, 1, batch_size, 0.1)
train(net, 2, batch_size * 2, 0.2)
