-- tools/model_table.lua: the GPU models' microbenchmarks (issue 29), as a
-- Markdown table per model: each modelled value beside the published
-- figure it should approach. docs/gpu-models.md "Microbenchmarks" is its
-- output; spec/model_table_spec.lua checks that the doc's rows are what it
-- prints.
--
--   build/gshell --sim-gpus 2 tools/model_table.lua [quick] [models]
--
-- quick: the rows that do not depend on this machine only (no training
-- steps, no host-bound launch loop); models: a comma-separated list
-- (default: every model).
--
-- How each row is got, on simulated GPUs that model each GPU in turn:
--   * bandwidth: a copy_ of 64 MiB of float32 inside the device, its
--     kernel's modelled span in a profile (the device's own time, however
--     fast the host queues): bytes read plus written per second;
--   * SGEMM and TF32 GEMM: products n x n x n timed the same way for n up
--     to 1024; the larger ones (minutes each to compute on a laptop's
--     cores) from the same formula (torch.cuda._model_time, which the
--     profile's spans follow exactly: spec/profiler_model_spec.lua),
--     marked "(formula)";
--   * empty kernel: 200 fills of one element queued back to back, by the
--     host's clock (torch.clock): the host's launch cost bounds it, as on
--     a real GPU;
--   * H2D and D2H, pageable and pinned: 64 MiB copies timed by the host's
--     clock around the copy and a synchronize();
--   * LeNet and ResNet-18 training steps (SGD, random data) by the host's
--     clock: examples per second; ResNet-18 is the multi-GPU chapter's
--     (d2l.resnet18(10, 1)) on 28x28 images, batch 32 (96x96 at the book's
--     batch of 256 takes many minutes a step to compute here).
local torch = require("torch")
local nn = torch.nn
local d2l = d2l or require("d2l")

local quick = false
local only
for _, a in ipairs(arg or {}) do
  if a == "quick" then quick = true else only = a end
end

local dev = "cuda:0"
local MIB = 1048576

local function sync() torch.cuda.synchronize() end

-- device seconds of fn's kernels on the device, from the profiler's
-- modelled spans (each kernel's own time, whatever the host's pace)
local function device_time(fn)
  sync()
  local p = torch.profiler.profile(function() fn(); sync() end)
  local ns = 0
  for _, e in ipairs(p.events) do
    if e.device == dev and e.kind == "kernel" then ns = ns + (e.t1 - e.t0) end
  end
  return ns / 1e9
end

-- host seconds of fn, devices idle before and after
local function host_time(fn)
  sync()
  local t0 = torch.clock()
  fn()
  sync()
  return torch.clock() - t0
end

local function fmt_rate(x, unit)
  if x >= 1e12 then return string.format("%.1f T%s", x / 1e12, unit) end
  return string.format("%.1f G%s", x / 1e9, unit)
end
local function fmt_us(s) return string.format("%.1f us", s * 1e6) end

local function gemm_rows(m, rows, tf32)
  local unit = tf32 and "TF32 GEMM" or "SGEMM"
  local peak = tf32 and m.peak.tf32_tc or m.peak.fp32
  if tf32 and peak == 0 then
    rows[#rows + 1] = { unit, "none: FP32 CUDA cores", string.format("no TF32 (%s)", m.arch) }
    return
  end
  torch._set_allow_tf32(tf32)
  for _, n in ipairs({ 256, 512, 1024, 2048, 4096, 8192 }) do
    local t, how
    if n <= 1024 then
      local A = torch.ones(n, n, { device = dev })
      local _ = A:mm(A) -- first use of the size
      t = device_time(function() local _ = A:mm(A) end)
      how = ""
    else
      t = torch.cuda._model_time(m.key, "gemm", { m = n, n = n, k = n })
      how = " (formula)"
    end
    rows[#rows + 1] = { string.format("%s %d", unit, n), fmt_rate(2 * n ^ 3 / t, "FLOP/s") .. how,
      fmt_rate(peak, "FLOP/s") .. " peak" }
  end
  torch._set_allow_tf32(false)
end

local function copy_rows(m, rows)
  local n = 16 * MIB -- 64 MiB of float32
  local bytes = 4 * n
  local link = 8e9 * 128 / 130 / 8 * 2 ^ (m.pcie_gen - 3) * m.pcie_lanes
  local pub = string.format("%.1f GB/s link (PCIe %d x%d)", link / 1e9, m.pcie_gen, m.pcie_lanes)
  local pageable = torch.ones(n)
  local pinned = torch.ones(n):pin_memory()
  local d = torch.ones(n, { device = dev })
  local out_pinned = torch.empty(n):pin_memory()
  local cases = {
    { "H2D pageable", function() local _ = pageable:to(dev) end },
    { "H2D pinned", function() local _ = pinned:to(dev, { non_blocking = true }) end },
    { "D2H pageable", function() local _ = d:to("cpu") end },
    { "D2H pinned", function() out_pinned:copy_(d) end },
  }
  for _, c in ipairs(cases) do
    c[2]() -- first use
    rows[#rows + 1] = { c[1] .. " (64 MiB)", fmt_rate(bytes / host_time(c[2]), "B/s"), pub }
  end
end

local function step_rate(net, X, y)
  local opt = torch.optim.SGD(net:parameters(), { lr = 0.01 })
  local loss = nn.CrossEntropyLoss()
  local function step()
    opt:zero_grad()
    loss(net(X), y):backward()
    opt:step()
  end
  step()
  return X:size(1) / host_time(step)
end

local function rows_of(m)
  local rows = {}
  local n = 64 * MIB / 4
  local a, b = torch.ones(n, { device = dev }), torch.empty(n, { device = dev })
  b:copy_(a)
  local t = device_time(function() b:copy_(a) end)
  rows[#rows + 1] = { "bandwidth: copy_ of 64 MiB", fmt_rate(2 * 4 * n / t, "B/s"),
    fmt_rate(m.bandwidth, "B/s") .. " HBM/GDDR" }
  gemm_rows(m, rows, false)
  gemm_rows(m, rows, true)
  if not quick then
    local one = torch.ones(1, { device = dev })
    one:fill_(0)
    local k = 200
    local per = host_time(function() for _ = 1, k do one:fill_(0) end end) / k
    rows[#rows + 1] = { "empty kernel, back to back (host clock)", fmt_us(per),
      "3.8 us (V100, CUDA Graphs blog)" }
  end
  local one = torch.ones(1, { device = dev })
  rows[#rows + 1] = { "empty kernel on the device", fmt_us(device_time(function()
    for _ = 1, 10 do one:fill_(0) end
  end) / 10), "none published (model: 2 us)" }
  if not quick then copy_rows(m, rows) end
  if not quick then
    torch.manual_seed(0)
    local lenet = nn.Sequential(nn.Conv2d(1, 6, 5, { padding = 2 }), nn.Sigmoid(), nn.AvgPool2d(2, { stride = 2 }),
      nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.AvgPool2d(2, { stride = 2 }), nn.Flatten(),
      nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10)):to(dev)
    local X, y = torch.randn(256, 1, 28, 28, { device = dev }), torch.randint(1, 11, { 256 }, { device = dev })
    rows[#rows + 1] = { "LeNet training step, batch 256", string.format("%.0f examples/s", step_rate(lenet, X, y)), "-" }
    local resnet = d2l.resnet18(10, 1):to(dev)
    local Xr, yr = torch.randn(32, 1, 28, 28, { device = dev }), torch.randint(1, 11, { 32 }, { device = dev })
    rows[#rows + 1] = { "ResNet-18 training step, 28x28, batch 32",
      string.format("%.0f examples/s", step_rate(resnet, Xr, yr)), "-" }
  end
  return rows
end

local keys = {}
if only then
  for k in only:gmatch("[^,]+") do keys[#keys + 1] = k end
else
  keys = torch.cuda.gpu_models()
end
for _, key in ipairs(keys) do
  local old = torch.cuda._set_gpu_model(key)
  local m = torch.cuda.gpu_model(0)
  local rows = rows_of(m)
  torch.cuda._set_gpu_model(old)
  print(string.format("\n#### %s (`%s`)\n", m.name, key))
  print("| benchmark | modelled | published |")
  print("| --- | --- | --- |")
  for _, r in ipairs(rows) do print(string.format("| %s | %s | %s |", r[1], r[2], r[3])) end
end
