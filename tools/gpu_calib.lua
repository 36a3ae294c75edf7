-- tools/gpu_calib.lua: the time model's microbenchmarks measured on a GPU
-- (issue 29's calibration), one result a line, for tools/fit_gpu_model.lua:
--
--   build/gshell tools/gpu_calib.lua [cuda:0] [quick] > calib.txt
--
-- On a real GPU (tools/gpu_run.sh runs it as its `calib` part) the times
-- are the GPU's, from CUDA events around each run; on a simulated GPU that
-- models one they are the model's (a dry run: the fit then finds the
-- model's own constants back). Lines:
--   device NAME
--   copy BYTES_MOVED SECONDS             a copy_ inside the device
--   gemm fp32|tf32 N SECONDS             one N x N x N float32 product
--   launch SECONDS                       one empty kernel, back to back
--   h2d|d2h pageable|pinned BYTES SECONDS
--   step lenet|resnet18 BATCH SECONDS    one SGD training step
-- quick: smaller sizes and no training steps (the spec's dry run).
local torch = require("torch")
local nn = torch.nn

local dev, quick = "cuda:0", false
for _, a in ipairs(arg or {}) do
  if a == "quick" then quick = true else dev = a end
end
local function sync() torch.cuda.synchronize(dev) end

-- seconds of fn() on the device, between two events; the best of `tries`
local function timed(fn, tries)
  local best = math.huge
  for _ = 1, tries or 3 do
    sync()
    local s, e = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
    s:record()
    fn()
    e:record()
    e:synchronize()
    best = math.min(best, s:elapsed_time(e) / 1e3)
  end
  return best
end

-- seconds on the host's clock, devices idle before and after
local function clocked(fn)
  sync()
  local t0 = torch.clock()
  fn()
  sync()
  return torch.clock() - t0
end

print("device " .. torch.cuda.get_device_name(torch.device(dev).index or 0))

local n = (quick and 16 or 64) * 2 ^ 20 // 4 -- 16 or 64 MiB of float32
local a, b = torch.ones(n, { device = dev }), torch.empty(n, { device = dev })
b:copy_(a)
print(string.format("copy %d %.9g", 8 * n, timed(function() b:copy_(a) end)))
a, b = nil, nil

for _, kind in ipairs({ "fp32", "tf32" }) do
  torch._set_allow_tf32(kind == "tf32")
  for _, size in ipairs(quick and { 256, 512 } or { 256, 512, 1024, 2048, 4096, 8192 }) do
    local A = torch.ones(size, size, { device = dev })
    local _ = A:mm(A)
    print(string.format("gemm %s %d %.9g", kind, size, timed(function() local _ = A:mm(A) end)))
  end
end
torch._set_allow_tf32(false)

local one = torch.ones(1, { device = dev })
one:fill_(0)
local k = quick and 50 or 1000
print(string.format("launch %.9g", clocked(function() for _ = 1, k do one:fill_(0) end end) / k))

local host = { pageable = torch.ones(n), pinned = torch.ones(n):pin_memory() }
local d = torch.ones(n, { device = dev })
for _, mem in ipairs({ "pageable", "pinned" }) do
  local h = host[mem]
  local _ = h:to(dev)
  print(string.format("h2d %s %d %.9g", mem, 4 * n, clocked(function() local _ = h:to(dev, { non_blocking = true }) end)))
  h:copy_(d)
  print(string.format("d2h %s %d %.9g", mem, 4 * n, clocked(function() h:copy_(d) end)))
end

if not quick then
  local function step(net, X, y)
    local opt = torch.optim.SGD(net:parameters(), { lr = 0.01 })
    local loss = nn.CrossEntropyLoss()
    local function one_step() opt:zero_grad(); loss(net(X), y):backward(); opt:step() end
    one_step()
    return clocked(one_step)
  end
  torch.manual_seed(0)
  local lenet = nn.Sequential(nn.Conv2d(1, 6, 5, { padding = 2 }), nn.Sigmoid(), nn.AvgPool2d(2, { stride = 2 }),
    nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.AvgPool2d(2, { stride = 2 }), nn.Flatten(),
    nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10)):to(dev)
  local X, y = torch.randn(256, 1, 28, 28, { device = dev }), torch.randint(1, 11, { 256 }, { device = dev })
  print(string.format("step lenet 256 %.9g", step(lenet, X, y)))
  local d2l = d2l or require("d2l")
  local resnet = d2l.resnet18(10, 1):to(dev)
  local Xr, yr = torch.randn(64, 1, 28, 28, { device = dev }), torch.randint(1, 11, { 64 }, { device = dev })
  print(string.format("step resnet18 64 %.9g", step(resnet, Xr, yr)))
end
