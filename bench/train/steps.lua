-- bench/train/steps.lua: the gshell side of the training-step benchmark
-- (bench/train/run.sh): examples per second of full training steps
-- (forward, cross-entropy, backward, SGD) of D2L's LeNet (ReLU and max
-- pooling, batch 256) and of the multi-GPU chapter's ResNet-18 (28x28,
-- batch 64) on the cpu device; the same LeNet through nn.DataParallel on
-- two simulated GPUs against one; and one epoch of the book's train_ch6
-- loop (sigmoid LeNet, Fashion-MNIST, batch 256) on the cpu; a character
-- LSTM's step (examples/char_rnn.lua's size) on the cpu. Prints
-- `name value unit` lines; the best of a few rounds counts.
-- Run with LUA_CPATH="build/?.so;;" lua5.4 (and GSHELL_SIM_GPUS=2).
local torch = require("torch")
local nn = torch.nn
local d2l = require("d2l")
local clock = torch.clock

local function lenet(relu)
  local act = relu and nn.ReLU or nn.Sigmoid
  local pool = relu and nn.MaxPool2d or nn.AvgPool2d
  return nn.Sequential(
    nn.Conv2d(1, 6, 5, { padding = 2 }), act(), pool(2, { stride = 2 }),
    nn.Conv2d(6, 16, 5), act(), pool(2, { stride = 2 }),
    nn.Flatten(), nn.Linear(16 * 5 * 5, 120), act(), nn.Linear(120, 84), act(), nn.Linear(84, 10))
end

-- examples/s of `steps` training steps on one fixed batch, best of `rounds`
local function steps_per_sec(net, dev, batch, hw, steps, rounds)
  torch.manual_seed(0)
  local X = torch.randn(batch, 1, hw, hw):to(dev)
  local y = torch.randint(1, 11, { batch }):to(dev)
  local loss = nn.CrossEntropyLoss()
  local opt = torch.optim.SGD(net:parameters(), { lr = 0.01 })
  local function step()
    opt:zero_grad()
    local l = loss(net(X), y)
    l:backward()
    opt:step()
  end
  step(); step()
  torch.cuda.synchronize()
  local best = math.huge
  for _ = 1, rounds do
    local t0 = clock()
    for _ = 1, steps do step() end
    torch.cuda.synchronize()
    best = math.min(best, clock() - t0)
  end
  return batch * steps / best
end

local which = arg[1] or "all"
if which == "all" or which == "lenet" then
  print("lenet_cpu", steps_per_sec(lenet(true), "cpu", 256, 28, 20, 3), "examples/s")
end
if which == "all" or which == "resnet" then
  print("resnet18_cpu", steps_per_sec(d2l.resnet18(10, 1), "cpu", 64, 28, 3, 2), "examples/s")
end
if (which == "all" or which == "dp") and torch.cuda.device_count() >= 2 then
  local one = steps_per_sec(lenet(true):to("cuda:0"), "cuda:0", 256, 28, 20, 3)
  local dp = nn.DataParallel(lenet(true):to("cuda:0"), { device_ids = { 0, 1 } })
  local two = steps_per_sec(dp, "cuda:0", 256, 28, 20, 3)
  print("lenet_sim1", one, "examples/s")
  print("lenet_dp2", two, "examples/s")
end
if which == "all" or which == "lstm" then
  -- examples/char_rnn.lua's step at its default size (the book's 10.1):
  -- one-hot ids through an LSTM of 256 and a Linear to the 28-character
  -- vocabulary, batch 32 x 35 steps, cross-entropy, grad_clipping, SGD;
  -- tokens/s
  torch.manual_seed(0)
  local V, B, T = 28, 32, 35
  local net = d2l.RNNModel(nn.LSTM(V, 256), V)
  local X, Y = torch.randint(1, V + 1, { B, T }), torch.randint(1, V + 1, { B, T })
  local y = Y:t():reshape(-1)
  local loss = nn.CrossEntropyLoss()
  local opt = torch.optim.SGD(net:parameters(), { lr = 1 })
  local function step()
    local state = net:begin_state("cpu", B)
    opt:zero_grad()
    local y_hat = net(X, state)
    loss(y_hat, y):mean():backward()
    d2l.grad_clipping(net, 1)
    opt:step()
  end
  step(); step()
  local best = math.huge
  for _ = 1, 3 do
    local t0 = clock()
    for _ = 1, 5 do step() end
    best = math.min(best, clock() - t0)
  end
  print("lstm_cpu", B * T * 5 / best, "tokens/s")
end
if which == "all" or which == "epoch" then
  -- train_ch6's loop (the book's sigmoid LeNet, lr 0.9), one epoch on the
  -- cpu, data loading included, timed as the book times it (the steps)
  local train_iter = d2l.load_data_fashion_mnist(256)
  local net = lenet(false)
  local loss = nn.CrossEntropyLoss()
  local opt = torch.optim.SGD(net:parameters(), { lr = 0.9 })
  local n, t0 = 0, clock()
  for _, X, y in train_iter:enumerate() do
    opt:zero_grad()
    local l = loss(net(X), y)
    l:backward()
    opt:step()
    n = n + X:size(1)
  end
  print("lenet_epoch_cpu", n / (clock() - t0), "examples/s")
end
