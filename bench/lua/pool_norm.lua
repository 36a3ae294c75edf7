-- bench/lua/pool_norm.lua: max_pool2d and batch_norm, forward + backward,
-- on LeNet- and ResNet-18-sized tensors (issue 20); bench/py/pool_norm.py
-- is the same work in PyTorch. One `name ms/iter ms` line per case: the
-- median of 7 repetitions after a warm-up.
--   LUA_CPATH="build/?.so;;" lua5.4 bench/lua/pool_norm.lua
local torch = require("torch")

local function time_it(name, iters, fn)
  for _ = 1, 2 do fn() end
  local t = {}
  for r = 1, 7 do
    local t0 = torch.clock()
    for _ = 1, iters do fn() end
    t[r] = (torch.clock() - t0) / iters * 1000
  end
  table.sort(t)
  print(("%s %.4f ms"):format(name, t[4]))
end

local function pool_case(name, shape, k, opts, iters)
  torch.manual_seed(0)
  local x = torch.randn(table.unpack(shape)):requires_grad_()
  local g
  time_it(name, iters, function()
    x.grad = nil
    local y = torch.max_pool2d(x, k, opts)
    g = g or torch.randn(y.shape)
    y:backward(g)
  end)
end

local function bn_case(name, shape, iters)
  torch.manual_seed(0)
  local c = shape[2]
  local x = torch.randn(table.unpack(shape)):requires_grad_()
  local w, b = torch.ones(c):requires_grad_(), torch.zeros(c):requires_grad_()
  local rm, rv = torch.zeros(c), torch.ones(c)
  local g = torch.randn(table.unpack(shape))
  time_it(name, iters, function()
    x.grad, w.grad, b.grad = nil, nil, nil
    local y = torch.batch_norm(x, rm, rv, { weight = w, bias = b, training = true })
    y:backward(g)
  end)
end

pool_case("maxpool_lenet1_256x6x28x28_k2", { 256, 6, 28, 28 }, 2, {}, 10)
pool_case("maxpool_lenet2_256x16x10x10_k2", { 256, 16, 10, 10 }, 2, {}, 20)
pool_case("maxpool_resnet_64x64x28x28_k3s2p1", { 64, 64, 28, 28 }, 3, { stride = 2, padding = 1 }, 10)
bn_case("bn_lenet_256x6x28x28", { 256, 6, 28, 28 }, 10)
bn_case("bn_lenet_256x120", { 256, 120 }, 50)
bn_case("bn_resnet_64x64x28x28", { 64, 64, 28, 28 }, 10)
bn_case("bn_resnet_64x128x7x7", { 64, 128, 7, 7 }, 30)
