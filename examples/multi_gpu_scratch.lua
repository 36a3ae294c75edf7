-- examples/multi_gpu_scratch.lua: data-parallel training on several GPUs
-- written by hand, as in Dive into Deep Learning's "Multi-GPU Training
-- from Scratch": every device holds a full copy of the parameters, each
-- minibatch is scattered over the devices, each device computes the
-- gradients of its share, a hand-written all-reduce sums the gradients
-- so every copy receives the same update.
--
--   build/gshell --sim-gpus 2 examples/multi_gpu_scratch.lua
--
-- The data are synthetic (three Gaussian classes in 20 dimensions) so the
-- example needs no download; the model is a two-layer perceptron written
-- with plain tensors. With no GPU the single device is the cpu.
torch = torch or require("torch")
local comm = torch.cuda.comm
local devices = torch.try_all_gpus()
print("devices: " .. #devices .. " (" .. tostring(devices[1]) .. (#devices > 1 and " ..." or "") .. ")")

-- %% data
torch.manual_seed(0)
local n, d, h, k = 1536, 20, 64, 3
local centers = torch.randn(k, d) * 0.3
local labels = torch.randint(1, k + 1, { n })                 -- 1-based classes
local X = centers:index_select(1, labels) + torch.randn(n, d)

-- %% the model, from scratch
local params = {
  torch.randn(d, h) * 0.1, torch.zeros(h),
  torch.randn(h, k) * 0.1, torch.zeros(k),
}
local function net(x, p) return (x:matmul(p[1]) + p[2]):relu():matmul(p[3]) + p[4] end
local loss = torch.nn.CrossEntropyLoss({ reduction = "none" })

-- Each device gets its own copy of the parameters.
-- The clone subtlety: `p:to(device)` (and comm.broadcast) give back p
-- itself when p already lives on that device. Here the master parameters
-- are on the cpu, but were they on cuda:0, device 0's "copy" would be the
-- master tensor: requires_grad_ would turn the master into that device's
-- leaf and each in-place SGD step would move the master too. A clone
-- makes every replica its own tensor, wherever the master lives.
local function get_params(p, device)
  local r = {}
  for i, t in ipairs(p) do r[i] = t:to(device):clone():requires_grad_() end
  return r
end

-- The hand-written all-reduce: sum everything into data[1], then copy the
-- sum back. Both steps must write in place (add_, copy_): `data[i] =
-- data[1]:to(...)` would only rebind a local name, and the device's .grad
-- would keep its own partial gradient.
local function allreduce(data)
  for i = 2, #data do data[1]:add_(data[i]:to(data[1].device)) end
  for i = 2, #data do data[i]:copy_(data[1]:to(data[i].device)) end
end

-- A quick check of allreduce on one vector per device.
do
  local data = {}
  for i, dev in ipairs(devices) do data[i] = torch.ones(1, 2, { device = dev }) * i end
  allreduce(data)
  print("after allreduce: " .. tostring(data[1]:view(-1)) .. " on every device")
end

local function sgd(p, lr, batch_size)
  torch.no_grad(function()
    for _, t in ipairs(p) do
      t:sub_(t.grad * (lr / batch_size))
      t.grad:zero_()
    end
  end)
end

-- %% one minibatch on every device
local replicas = {}
for i, dev in ipairs(devices) do replicas[i] = get_params(params, dev) end

local function train_batch(x, y, lr)
  local xs = #devices > 1 and comm.scatter(x, devices) or { x:to(devices[1]) }
  local ys = #devices > 1 and comm.scatter(y, devices) or { y:to(devices[1]) }
  for i = 1, #xs do                               -- each device: its share's gradients
    loss(net(xs[i], replicas[i]), ys[i]):sum():backward()
  end
  torch.no_grad(function()                         -- sum the gradients across devices
    for j = 1, #params do
      local grads = {}
      for i = 1, #xs do grads[i] = replicas[i][j].grad end
      allreduce(grads)
    end
  end)
  for i = 1, #xs do sgd(replicas[i], lr, x:size(1)) end -- the same update everywhere
end

-- %% training
local batch_size, lr = 256, 0.2
for epoch = 1, 5 do
  torch.cuda.synchronize()
  local t0 = torch.clock()
  local perm = torch.randperm(n)               -- 1-based, like every position in gshell
  for s = 1, n, batch_size do
    local idx = perm:narrow(1, s, math.min(batch_size, n - s + 1))
    train_batch(X:index_select(1, idx), labels:index_select(1, idx), lr)
  end
  torch.cuda.synchronize()
  local logits = torch.no_grad(function() return net(X:to(devices[1]), replicas[1]) end)
  local acc = logits:argmax(2):eq(labels:to(devices[1])):float():mean():item()
  print(string.format("epoch %d: accuracy %.3f, %.3f s", epoch, acc, torch.clock() - t0))
end

-- Every device ends with the same parameters: the all-reduce kept them in step.
for i = 2, #devices do
  for j = 1, #params do
    assert(replicas[i][j]:to(devices[1]):equal(replicas[1][j]), "replicas drifted apart")
  end
end
print("replicas identical on " .. #devices .. " device(s)")
