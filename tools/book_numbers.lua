-- tools/book_numbers.lua: Dive into Deep Learning's printed timings (the
-- computational-performance chapter and the CNN chapters) re-run on
-- simulated GPUs that model the book's GPUs (issue 29); each line is
-- "section | what | the book | ours", and docs/book-numbers.md puts them
-- side by side with where and why they differ.
--
--   build/gshell tools/book_numbers.lua [quick]
--
-- It configures its own simulated GPUs (2 or 4, modelled on a V100 or an
-- A100 as each section says). Values are computed for real on this
-- machine's cores, so where the book's sizes would take minutes here the
-- run is shortened and the modelled time scaled (each line says how);
-- quick: only the sections that take seconds (async computation, the
-- hardware section, the parameter servers' ring: spec/book_numbers_spec.lua).
local torch = require("torch")
local nn = torch.nn
local d2l = d2l or require("d2l")

local quick = arg and arg[1] == "quick"
local MB = 1e6

local function sync() torch.cuda.synchronize() end

-- n simulated GPUs modelled on `spec`
local function gpus(spec, n)
  collectgarbage(); collectgarbage()
  torch._sim_configure(n)
  torch.cuda._set_gpu_model(spec)
end

local function line(section, what, book, ours, how)
  print(string.format("%s | %s | %s | %s%s", section, what, book, ours, how and (" (" .. how .. ")") or ""))
end

local function secs(s)
  if s >= 1 then return string.format("%.2f s", s) end
  if s >= 1e-3 then return string.format("%.4f s", s) end
  return string.format("%.5f s", s)
end

-- host-clock seconds of fn, devices idle before
local function clocked(fn)
  sync()
  local t0 = torch.clock()
  fn()
  return torch.clock() - t0
end

-- ---- 13.2 asynchronous computation: 10 products of 1000 x 1000 ----------
local function async(model, tf32)
  gpus(model, 1)
  torch._set_allow_tf32(tf32)
  local device = "cuda:0"
  local a = torch.randn(1000, 1000, { device = device })
  local _ = torch.mm(a, a)
  sync()
  local function ten(dev)
    for _ = 1, 10 do
      local x = torch.randn(1000, 1000, { device = dev })
      local _ = torch.mm(x, x)
    end
  end
  local tag = model .. (tf32 and ", TF32" or "")
  if model == "v100" then
    line("13.2 async", "numpy (here: torch on this machine's CPU)", "0.37 s", secs(clocked(function() ten("cpu") end)),
      "this machine's 2 busy cores")
  end
  line("13.2 async", "torch, queued (" .. tag .. ")", "0.0007 s", secs(clocked(function() ten(device) end)))
  line("13.2 async", "torch, synchronised (" .. tag .. ")", "0.0011 s",
    secs(clocked(function() ten(device); sync() end)))
  torch._set_allow_tf32(false)
end

-- ---- 13.3 automatic parallelism: 50 products of 4000 x 4000 per GPU ------
local function autoparallel(model, tf32)
  gpus(model, 2)
  torch._set_allow_tf32(tf32)
  local REPS, BOOK = 2, 50 -- 2 products (each 128 GFLOP, seconds here), scaled to the book's 50
  local scale = BOOK / REPS
  local x1 = torch.rand(4000, 4000, { device = "cuda:0" })
  local x2 = torch.rand(4000, 4000, { device = "cuda:1" })
  local function run(x)
    local r = {}
    for i = 1, REPS do r[i] = x:mm(x) end
    return r
  end
  run(x1); run(x2); sync()
  local how = string.format("%d of the book's %d products, times x %d", REPS, BOOK, scale)
  local tag = model .. (tf32 and ", TF32" or "")
  line("13.3 auto-parallelism", "GPU1 time (" .. tag .. ")", "0.12 s",
    secs(scale * clocked(function() run(x1); sync() end)), how)
  line("13.3 auto-parallelism", "GPU1 & GPU2 (" .. tag .. ")", "-",
    secs(scale * clocked(function() run(x1); run(x2); sync() end)), how .. "; both queued, then one wait")
  local ys
  local t_run = clocked(function() ys = run(x1); sync() end)
  line("13.3 auto-parallelism", "Run on GPU1 (" .. tag .. ")", "0.12 s", secs(scale * t_run), how)
  local t_copy = clocked(function()
    for i, y in ipairs(ys) do ys[i] = y:to("cpu", { non_blocking = true }) end
    sync()
  end)
  line("13.3 auto-parallelism", "Copy to CPU (" .. tag .. ")", "2.16 s", secs(scale * t_copy),
    how .. "; 64 MB each, pageable")
  local t_both = clocked(function()
    local r = run(x1)
    for i, y in ipairs(r) do r[i] = y:to("cpu", { non_blocking = true }) end
    sync()
  end)
  line("13.3 auto-parallelism", "Run on GPU1 and copy to CPU (" .. tag .. ")", "3.13 s", secs(scale * t_both), how)
  torch._set_allow_tf32(false)
end

-- ---- the hardware section's latencies ------------------------------------
local function hardware()
  gpus("v100", 2)
  local one = torch.ones(1, { device = "cuda:0" })
  one:fill_(0)
  local k = 200
  local per = clocked(function() for _ = 1, k do one:fill_(0) end; sync() end) / k
  line("hardware", "kernel launch", "10 us", string.format("%.1f us", per * 1e6),
    "200 empty kernels back to back on a V100 model: 2 us on the device, 3 us in the host's driver, and the host's own work")
  local g = torch.empty(40 * 1000 * 1000, { device = "cuda:0" }) -- 160 MB
  g:fill_(0)
  local t_nv = clocked(function() local _ = g:to("cuda:1"); sync() end)
  line("hardware", "160 MB GPU to GPU over NVLink (V100)", "-", secs(t_nv), "one direction of 300 GB/s, x 0.8")
  g, one = nil, nil
  gpus("t4", 2)
  g = torch.empty(40 * 1000 * 1000, { device = "cuda:0" })
  g:fill_(0)
  local t_pcie = clocked(function() local _ = g:to("cuda:1"); sync() end)
  line("hardware", "160 MB GPU to GPU over PCIe 3 (T4, no NVLink)", "0.0100 s (the parameter-server section)",
    secs(t_pcie))
  g = nil
end

-- ---- the parameter-server section: 160 MB of gradients on 4 GPUs ---------
-- ring allreduce as the book draws it: the gradient in n chunks; n - 1
-- steps where each GPU sends one chunk to the next and adds what it gets
-- (reduce-scatter), n - 1 steps passing the summed chunks on (all-gather);
-- in each step every GPU's copy runs at once, on its own link
local function ring_allreduce(grads, bufs, recv)
  local n = #grads
  local parts = {}
  for i, g in ipairs(grads) do parts[i] = g:chunk(n) end
  -- each GPU j receives into bufs[j] (one chunk, allocated once, as NCCL's
  -- buffers are) from GPU j - 1, on a stream of its own (recv[j]): a copy
  -- on j's default stream would wait for j's own send first
  for phase = 1, 2 do
    for step = 0, n - 2 do
      local c = {}
      for i = 1, n do
        local j = i % n + 1
        c[i] = (i - 1 - step + (phase == 2 and 1 or 0)) % n + 1
        recv[j]:wait_stream(torch.cuda.default_stream(j - 1)) -- bufs[j] read by the last add
        torch.cuda.with_stream(recv[j], function() bufs[j]:copy_(parts[i][c[i]]) end)
      end
      for i = 1, n do
        local j = i % n + 1
        torch.cuda.default_stream(j - 1):wait_stream(recv[j])
        if phase == 1 then parts[j][c[i]]:add_(bufs[j]) else parts[j][c[i]]:copy_(bufs[j]) end
      end
    end
  end
end

local function parameter_server()
  gpus("v100", 4)
  local grads = {}
  local bufs, recv = {}, {}
  for i = 1, 4 do
    recv[i] = torch.cuda.Stream(i - 1)
    grads[i] = torch.full({ 40 * 1000 * 1000 }, i, { device = "cuda:" .. (i - 1), dtype = torch.float32 })
    bufs[i] = torch.empty(10 * 1000 * 1000, { device = "cuda:" .. (i - 1) })
  end
  ring_allreduce(grads, bufs, recv) -- first use
  for i = 1, 4 do grads[i]:fill_(i) end
  local t = clocked(function() ring_allreduce(grads, bufs, recv); sync() end)
  assert(grads[3][12345]:item() == 10, "the ring's sum is wrong")
  line("parameter servers", "ring allreduce of 160 MB on 4 GPUs over NVLink (V100)", "-", secs(t),
    "6 steps of 40 MB copies, each GPU sending to the next at once")
  grads, bufs, recv = nil, nil, nil
end

-- ---- the CNN chapters' examples per second --------------------------------
local function step_rate(net, X, y, profile)
  local opt = torch.optim.SGD(net:parameters(), { lr = 0.01 })
  local loss = nn.CrossEntropyLoss()
  local function step()
    opt:zero_grad()
    loss(net(X), y):backward()
    opt:step()
  end
  step()
  local busy = 0
  local t = clocked(function()
    if profile then
      local p = torch.profiler.profile(function() step(); sync() end)
      for _, e in ipairs(p.events) do
        if e.device == "cuda:0" and e.kind ~= "sync" then busy = busy + (e.t1 - e.t0) / 1e9 end
      end
    else
      step()
      sync()
    end
  end)
  return X:size(1) / t, busy
end

local function cnn(model, tf32)
  gpus(model, 1)
  -- (PyTorch runs convolutions on TF32 tensor cores by default:
  -- torch.backends.cudnn.allow_tf32; here one switch covers both)
  torch._set_allow_tf32(tf32 or false)
  model = model .. (tf32 and ", TF32" or "")
  torch.manual_seed(0)
  local lenet = nn.Sequential(nn.Conv2d(1, 6, 5, { padding = 2 }), nn.Sigmoid(), nn.AvgPool2d(2, { stride = 2 }),
    nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.AvgPool2d(2, { stride = 2 }), nn.Flatten(),
    nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10)):to("cuda:0")
  local X, y = torch.randn(256, 1, 28, 28, { device = "cuda:0" }), torch.randint(1, 11, { 256 }, { device = "cuda:0" })
  local rate, busy = step_rate(lenet, X, y, true)
  line("7.6 LeNet", "examples/sec, batch 256 (" .. model .. ")", "55296.6", string.format("%.1f", rate),
    string.format("one training step; the device busy %.2f ms of %.2f", busy * 1e3, 256 / rate * 1e3))
  -- the chapter's ResNet-18: b1 (7x7 convolution, stride 2, max-pooling)
  -- to b5, for 96x96 images (examples/resnet.lua builds it the same way)
  local function stage(cin, cout, first)
    local first_block = first and d2l.Residual(cout, cout) or d2l.Residual(cin, cout, { use_1x1conv = true, strides = 2 })
    return nn.Sequential(first_block, d2l.Residual(cout, cout))
  end
  local resnet = nn.Sequential(
    nn.Sequential(nn.Conv2d(1, 64, 7, { stride = 2, padding = 3 }), nn.BatchNorm2d(64), nn.ReLU(),
      nn.MaxPool2d(3, { stride = 2, padding = 1 })),
    stage(64, 64, true), stage(64, 128), stage(128, 256), stage(256, 512),
    nn.AdaptiveAvgPool2d({ 1, 1 }), nn.Flatten(), nn.Linear(512, 10)):to("cuda:0")
  local B = 64
  local Xr = torch.randn(B, 1, 96, 96, { device = "cuda:0" })
  local yr = torch.randint(1, 11, { B }, { device = "cuda:0" })
  local r16, busy16 = step_rate(resnet, Xr, yr, true)
  line("8.6 ResNet-18", "examples/sec, 96x96 (" .. model .. ")", "about 4700",
    string.format("%.0f at batch %d; about %.0f at the book's 256", r16, B, B / busy16),
    string.format("batch %d computed (a step of 256 takes minutes here); at 256 the device's time per example " ..
      "is at most batch %d's, %.2f ms, so the step is device-bound", B, B, busy16 / B * 1e3))
  torch._set_allow_tf32(false)
end

print("section | what | the book | ours")
async("v100", false)
async("a100", true)
hardware()
parameter_server()
if not quick then
  cnn("v100")
  cnn("a100")
  cnn("a100", true)
  autoparallel("v100", false)
  autoparallel("a100", true)
end
torch.cuda._set_gpu_model("v100")
