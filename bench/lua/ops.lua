-- gshell side of the benchmarks: the same work as bench/py/ops.py.
-- Prints one `name value unit` line per benchmark (see bench/README.md).
-- Run: LUA_CPATH="build/?.so;;" lua5.4 bench/lua/ops.lua
local torch = require("torch")
local clock = torch.clock

local function median(t)
  table.sort(t)
  local n = #t
  if n % 2 == 1 then return t[(n + 1) // 2] end
  return (t[n // 2] + t[n // 2 + 1]) / 2
end

-- Median over `reps` repetitions of the mean time of one call of fn.
local function time_per_iter(fn, iters, reps, warmup)
  for _ = 1, warmup or 2 do fn() end
  local times = {}
  for r = 1, reps or 5 do
    local t0 = clock()
    for _ = 1, iters do fn() end
    times[r] = (clock() - t0) / iters
  end
  return median(times)
end

-- Keep going when a benchmark fails (an op missing): it reports "nan".
-- Each starts with a full collection, so that no benchmark pays for the
-- garbage of the one before (each does pay for collecting its own).
-- `ops.lua memory`: only the memory-bound 16M rows (bench/run.sh runs them
-- in extra short rounds, alternating sides, as the machine's bandwidth
-- drifts by up to 1.7x from one minute to the next).
local only_memory = arg and arg[1] == "memory"
local function run(name, unit, f)
  if only_memory and not name:match("_16M$") then return end
  collectgarbage()
  local ok, v = pcall(f)
  if ok then
    print(string.format("%s %.6g %s", name, v, unit))
  else
    print(string.format("%s nan %s", name, unit))
    io.stderr:write(string.format("# %s failed: %s\n", name, tostring(v)))
  end
  io.stdout:flush()
end

-- per-op overhead: a + b on 4-element float tensors --------------------------
run("add_tiny", "us/op", function()
  local a, b = torch.ones(4), torch.ones(4)
  local n = 100000
  local function loop()
    for _ = 1, n do local c = a + b end -- luacheck: ignore c
  end
  return time_per_iter(loop, 1, 5, 1) / n * 1e6
end)

-- matmul GFLOP/s ------------------------------------------------------------
local function matmul(n, iters, reps)
  return function()
    local a, b = torch.randn(n, n), torch.randn(n, n)
    local t = time_per_iter(function() return torch.matmul(a, b) end, iters, reps, math.max(iters, 4))
    return 2 * n ^ 3 / t / 1e9
  end
end
-- Warm-up: at least 4 products, so that both sides are timed in their
-- steady state (a process's first products write their results into fresh
-- memory; see bench/README.md).
run("matmul_500", "GFLOP/s", matmul(500, 50, 5))
run("matmul_2000", "GFLOP/s", matmul(2000, 1, 5))

-- 16M float32 memory-bound ops: GB/s counting bytes read + written ----------
local N = 16 * 1024 * 1024
local F = 4 -- bytes per float32
local x, y = torch.randn(N), torch.randn(N)

local function gbps(nbytes, fn, iters)
  return function() return nbytes / time_per_iter(fn, iters or 10) / 1e9 end
end

run("copy_16M", "GB/s", gbps(2 * N * F, function() y:copy_(x) end))
run("add_16M", "GB/s", gbps(3 * N * F, function() local z = x + y end))
run("exp_16M", "GB/s", gbps(2 * N * F, function() local z = x:exp() end))
run("sum_16M", "GB/s", gbps(N * F, function() local s = x:sum() end))
run("max_16M", "GB/s", gbps(N * F, function() local s = x:max() end))
local m = x:view(4096, 4096)
run("sum_rows_16M", "GB/s", gbps(N * F, function() local s = m:sum(2) end))
run("sum_cols_16M", "GB/s", gbps(N * F, function() local s = m:sum(1) end))
x, y, m = nil, nil, nil
collectgarbage()

-- MLP training step: 784-256-10, batch 256, SGD (skipped until torch.nn exists)
local function field(k) local ok, v = pcall(function() return torch[k] end); return ok and v or nil end
local nn, optim = field("nn"), field("optim")
if not (nn and optim) then
  io.stderr:write("# mlp_step skipped: torch.nn / torch.optim not available\n")
  print("mlp_step nan steps/s")
else
  run("mlp_step", "steps/s", function()
    torch.manual_seed(0)
    local net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    local lossf = nn.CrossEntropyLoss()
    local opt = optim.SGD(net:parameters(), {lr = 0.01})
    local X, y = torch.randn(256, 784), torch.randint(1, 11, {256}) -- classes 1..10
    local function step()
      opt:zero_grad()
      local loss = lossf(net(X), y)
      loss:backward()
      opt:step()
    end
    return 1 / time_per_iter(step, 20, 5, 3)
  end)
end

-- convolution layers, forward + backward (input, weight and bias gradients):
-- GFLOP/s counting 3 products of 2*N*Cout*(Cin*k*k)*(oh*ow) flops each.
-- D2L's LeNet layers at batch 256, a ResNet 3x3 64->64 layer at 28x28 and
-- 56x56. The same work as bench/py/ops.py's conv rows.
local function conv_layer(n, cin, cout, hw, k, pad)
  return function()
    torch.manual_seed(0)
    local x = torch.randn(n, cin, hw, hw, {requires_grad = true})
    local w = torch.randn(cout, cin, k, k, {requires_grad = true})
    local b = torch.randn(cout, {requires_grad = true})
    local out = hw + 2 * pad - k + 1
    local gy = torch.randn(n, cout, out, out)
    local function step()
      x.grad, w.grad, b.grad = nil, nil, nil
      torch.conv2d(x, w, b, {padding = pad}):backward(gy)
    end
    local t = time_per_iter(step, 3, 5, 2)
    return 3 * 2 * n * cout * cin * k * k * out * out / t / 1e9
  end
end
run("conv_lenet1", "GFLOP/s", conv_layer(256, 1, 6, 28, 5, 2))
run("conv_lenet2", "GFLOP/s", conv_layer(256, 6, 16, 14, 5, 0))
run("conv_res28", "GFLOP/s", conv_layer(32, 64, 64, 28, 3, 1))
run("conv_res56", "GFLOP/s", conv_layer(8, 64, 64, 56, 3, 1))
