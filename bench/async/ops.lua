-- bench/async/ops.lua: what asynchronous simulated GPUs cost and buy.
-- Run by bench/async/run.sh, one benchmark group per process:
--   build/gshell --sim-gpus 2 bench/async/ops.lua GROUP
-- GROUP is one of
--   tiny   queuing a 4-element add on cuda:0 (host time per op, and the
--          device's throughput), and the same add on the cpu device
--   ex4    the chapter's exercise 4: two NxN products on cuda:0 and cuda:1
--          at once vs both on cuda:0 (N = BENCH_EX4_N, default 1024)
--   dp     forward + backward of a 3-layer 1024-wide MLP on a batch of
--          1024: nn.DataParallel over cuda:0 and cuda:1 vs the plain model
--          on cuda:0
--   mlp    the MLP training step of bench/lua/ops.lua (784-256-10, batch
--          256, SGD) on cuda:0 vs on the cpu device (run it with
--          --sim-gpus 1: the one device then has the whole machine)
-- Prints `name value unit` lines; the two variants of a comparison are
-- measured alternately, repetition by repetition, so that both meet the
-- same background load, and each value is the median repetition.
local group = arg and arg[1] or "tiny"
local clock, sync = torch.clock, torch.cuda.synchronize

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  local n = #s
  if n % 2 == 1 then return s[(n + 1) // 2] end
  return (s[n // 2] + s[n // 2 + 1]) / 2
end

local function out(name, value, unit) print(string.format("%s %.6g %s", name, value, unit)) end

-- Wall seconds of fn(), every device idle before and after.
local function wall(fn)
  sync()
  local t0 = clock()
  fn()
  sync()
  return clock() - t0
end

-- Runs the variants of a comparison alternately `reps` times (after one
-- warm-up round) and returns the median seconds of each.
local function alternate(reps, variants)
  for _, fn in ipairs(variants) do wall(fn) end
  local times = {}
  for i = 1, #variants do times[i] = {} end
  for r = 1, reps do
    for k = 1, #variants do
      local i = (r % 2 == 1) and k or (#variants + 1 - k) -- ABBA: neither always goes first
      times[i][#times[i] + 1] = wall(variants[i])
    end
  end
  local m = {}
  for i = 1, #variants do m[i] = median(times[i]) end
  return table.unpack(m)
end

if group == "tiny" then
  -- Host time to queue one tiny op: bursts of B adds, the clock read right
  -- after the last one is queued (before it ran), the device drained
  -- between bursts. Throughput: the same burst up to its synchronize.
  local B, BURSTS = 1000, 60
  local a, b = torch.ones(4, { device = "cuda:0" }), torch.ones(4, { device = "cuda:0" })
  local ca, cb = torch.ones(4), torch.ones(4)
  local q, thr, cpu = {}, {}, {}
  for i = 1, BURSTS + 5 do
    collectgarbage()
    sync()
    local t0 = clock()
    for _ = 1, B do local c = a + b end -- luacheck: ignore c
    local t1 = clock()
    sync()
    local t2 = clock()
    collectgarbage()
    local t3 = clock()
    for _ = 1, B do local c = ca + cb end -- luacheck: ignore c
    local t4 = clock()
    if i > 5 then -- the first bursts warm up the allocators' caches
      q[#q + 1], thr[#thr + 1], cpu[#cpu + 1] = (t1 - t0) / B, (t2 - t0) / B, (t4 - t3) / B
    end
  end
  out("tiny_queue_sim", median(q) * 1e6, "us/op")
  out("tiny_done_sim", median(thr) * 1e6, "us/op")
  out("tiny_cpu", median(cpu) * 1e6, "us/op")
  -- What the time model adds per queued op (issue 29): the same bursts on
  -- this machine's own clock (torch._real_clock: the modelled clock would
  -- report the V100's time), cuda:0 modelling a V100 vs no model (host),
  -- alternately. The cost is the median of each pair's difference: a
  -- pair's two bursts run a millisecond apart and meet the same load,
  -- where the difference of the two medians mixed load spells (0.14 to
  -- 0.38 us over three processes on a loaded machine).
  local real = torch._real_clock
  local spec = torch.cuda._set_gpu_model("host")
  local per, diff = { host = {}, v100 = {} }, {}
  for i = 1, 4 * BURSTS + 5 do
    local t = {}
    for _, m in ipairs(i % 2 == 1 and { "host", "v100" } or { "v100", "host" }) do
      torch.cuda._set_gpu_model(m)
      collectgarbage()
      sync()
      local t0 = real()
      for _ = 1, B do local c = a + b end -- luacheck: ignore c
      t[m] = (real() - t0) / B
      sync()
    end
    if i > 5 then
      per.host[#per.host + 1], per.v100[#per.v100 + 1] = t.host, t.v100
      diff[#diff + 1] = t.v100 - t.host
    end
  end
  torch.cuda._set_gpu_model(spec)
  out("tiny_queue_host", median(per.host) * 1e6, "us/op")
  out("tiny_queue_model", median(per.v100) * 1e6, "us/op")
  out("tiny_model_cost", median(diff) * 1e6, "us/op")
elseif group == "ex4" then
  local N = tonumber(os.getenv("BENCH_EX4_N") or "1024")
  torch.manual_seed(0)
  local A0 = torch.rand(N, N, { device = "cuda:0" })
  local B0 = torch.rand(N, N, { device = "cuda:0" })
  local B1 = B0:to("cuda:1")
  local one, two = alternate(7, {
    function() local _ = A0:matmul(A0); local _ = B0:matmul(B0) end,
    function() local _ = A0:matmul(A0); local _ = B1:matmul(B1) end,
  })
  out("ex4_n", N, "")
  out("ex4_one_device", one * 1e3, "ms")
  out("ex4_two_devices", two * 1e3, "ms")
  out("ex4_speedup", one / two, "x")
elseif group == "dp" then
  local nn = torch.nn
  torch.manual_seed(0)
  local net = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
    nn.Linear(1024, 1024)):to("cuda:0")
  local dp = nn.DataParallel(net, { device_ids = { 0, 1 } })
  local x = torch.randn(1024, 1024, { device = "cuda:0" })
  local function step(model)
    return function()
      net:zero_grad()
      model(x):sum():backward()
    end
  end
  local one, two = alternate(7, { step(net), step(dp) })
  out("dp_one_device", one * 1e3, "ms")
  out("dp_two_devices", two * 1e3, "ms")
  out("dp_speedup", one / two, "x")
elseif group == "mlp" then
  local nn, optim = torch.nn, torch.optim
  local function stepper(dev)
    torch.manual_seed(0)
    local net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)):to(dev)
    local lossf = nn.CrossEntropyLoss()
    local opt = optim.SGD(net:parameters(), { lr = 0.01 })
    local X, y = torch.randn(256, 784, { device = dev }), torch.randint(1, 11, { 256 }, { device = dev })
    return function()
      for _ = 1, 20 do
        opt:zero_grad()
        lossf(net(X), y):backward()
        opt:step()
      end
    end
  end
  local cpu, sim = alternate(7, { stepper("cpu"), stepper("cuda:0") })
  out("mlp_cpu", 20 / cpu, "steps/s")
  out("mlp_sim", 20 / sim, "steps/s")
  out("mlp_sim_vs_cpu", cpu / sim, "x")
else
  error("bench/async/ops.lua: unknown group '" .. tostring(group) .. "' (expected tiny, ex4, dp or mlp)")
end
