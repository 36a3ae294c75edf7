-- examples/mirrored_strategy.lua: the TensorFlow version's
-- tf.distribute.MirroredStrategy in gshell terms: one replica of the model
-- per device, each gets a slice of the batch, computes its gradients, the
-- gradients are summed on the first device (an all-reduce), and every
-- replica applies the same update, so the replicas stay identical.
--
--   build/gshell --sim-gpus 2 examples/mirrored_strategy.lua
--   build/gshell examples/mirrored_strategy.lua               (CPU only: one replica)
--
-- nn.DataParallel does the forward half of this for you; this script
-- spells out the whole training step.
torch = torch or require("torch")
nn = nn or torch.nn
try_all_gpus = try_all_gpus or torch.try_all_gpus

torch.manual_seed(0)
local devices = try_all_gpus()
print("replicas on:", table.concat((function()
  local s = {}
  for i, d in ipairs(devices) do s[i] = tostring(d) end
  return s
end)(), ", "))

-- data: y = 3x - 1 plus noise
local X = torch.randn(64, 1)
local y = X * 3 - 1 + torch.randn(64, 1) * 0.01

local master = nn.Linear(1, 1)
local replicas = {}
for i, d in ipairs(devices) do
  replicas[i] = nn.Linear(1, 1):to(d)
  replicas[i]:load_state_dict(master:state_dict())
end
local loss_fn = nn.MSELoss({ reduction = "sum" })
local lr = 0.01

for epoch = 1, 60 do
  local xs, ys = X:chunk(#devices), y:chunk(#devices)
  local total = 0
  -- each replica: forward and backward on its slice, on its device
  for i, d in ipairs(devices) do
    local r = replicas[i]
    r:zero_grad()
    local loss = loss_fn(r(xs[i]:to(d)), ys[i]:to(d))
    loss:backward()
    total = total + loss:item()
  end
  -- all-reduce: sum the gradients on the first device, average over the batch
  local first = devices[1]
  local gw, gb = replicas[1].weight.grad:to(first), replicas[1].bias.grad:to(first)
  for i = 2, #devices do
    gw = gw + replicas[i].weight.grad:to(first)
    gb = gb + replicas[i].bias.grad:to(first)
  end
  gw, gb = gw / X:size(1), gb / X:size(1)
  -- the same update everywhere
  for i, d in ipairs(devices) do
    local r = replicas[i]
    torch.no_grad(function()
      r.weight:sub_(gw:to(d) * lr * 2)
      r.bias:sub_(gb:to(d) * lr * 2)
    end)
  end
  if epoch % 20 == 0 then print(string.format("epoch %d  loss %.5f", epoch, total / X:size(1))) end
end

local w, b = replicas[1].weight:item(), replicas[1].bias:item()
print(string.format("learned w = %.3f, b = %.3f (true 3, -1)", w, b))
for i = 2, #devices do
  assert(torch.equal(replicas[i].weight:cpu(), replicas[1].weight:cpu()), "replicas drifted apart")
end
assert(math.abs(w - 3) < 0.1 and math.abs(b + 1) < 0.1, "did not learn")
print("replicas identical:", true)
