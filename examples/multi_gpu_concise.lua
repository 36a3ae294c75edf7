-- examples/multi_gpu_concise.lua: the same training as
-- multi_gpu_scratch.lua, the concise way (Dive into Deep Learning's
-- "Concise Implementation for Multiple GPUs"): nn.DataParallel splits
-- each batch over the devices, runs a replica of the model on each, and
-- gathers the outputs; gradients flow back to the one set of parameters
-- on the first device, so there is nothing to all-reduce by hand.
--
--   build/gshell --sim-gpus 2 examples/multi_gpu_concise.lua
torch = torch or require("torch")
local nn = torch.nn
local devices = torch.try_all_gpus()

torch.manual_seed(0)
local n, d, h, k = 1536, 20, 64, 3
local centers = torch.randn(k, d) * 0.3
local labels = torch.randint(1, k + 1, { n })
local X = centers:index_select(1, labels) + torch.randn(n, d)

local net = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, k))
net:to(devices[1])
local model = nn.DataParallel(net) -- every CUDA device; the plain net without any
local loss = nn.CrossEntropyLoss()
local opt = torch.optim.SGD(net:parameters(), { lr = 0.2 })
local loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, labels),
                                           { batch_size = 256, shuffle = true })

for epoch = 1, 5 do
  local t0 = torch.clock()
  for batch in loader do
    local x, y = batch[1]:to(devices[1]), batch[2]:to(devices[1])
    opt:zero_grad()
    loss(model(x), y):backward()
    opt:step()
  end
  torch.cuda.synchronize()
  local logits = torch.no_grad(function() return model(X:to(devices[1])) end)
  local acc = logits:argmax(2):eq(labels:to(devices[1])):float():mean():item()
  print(string.format("epoch %d: accuracy %.3f, %.3f s on %d device(s)", epoch, acc, torch.clock() - t0, #devices))
end
