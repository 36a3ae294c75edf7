-- examples/async_parallel.lua: Dive into Deep Learning, 13.2
-- "Asynchronous Computation" and 13.3 "Automatic Parallelism", on
-- d2l.try_gpu() and d2l.try_gpu(1):
--   1. ops on a GPU are queued and return at once: a clock without
--      synchronize() measures the queuing, not the work;
--   2. products on two devices at once vs each device alone: the two
--      devices compute at the same time;
--   3. copying the results back to the host while the device is still
--      computing the next ones (a copy waits for the product that made
--      its tensor and what was queued before it, not for the later ones),
--      and a copy from pinned memory with non_blocking = true, an Event
--      telling when it has run. On a simulated GPU that models a real one
--      (a V100 by default) the copies take the model's PCIe time and the
--      products the GPU's, so they overlap as on the real GPU
--      (tools/book_numbers.lua runs the book's sizes on V100 and A100
--      models: docs/book-numbers.md).
--
--   build/gshell --sim-gpus 2 examples/async_parallel.lua [N] [products]
--   build/gshell examples/async_parallel.lua              (no GPU: the cpu)
--   GSHELL_EXAMPLE_QUICK=1 build/gshell examples/async_parallel.lua  (the specs' short mode)
--
-- REDUCED: the book multiplies 4000x4000 matrices 50 times per device; the
-- default here is 10 products of 512x512 matrices (a simulated GPU computes
-- on a share of this machine's cores). The short mode: 4 products of
-- 128x128 matrices.
--
-- MEASURED here, before simulated GPUs modelled real ones (the times
-- below are this machine's; on a model they are the GPU's), the default
-- (10 products of 512x512, best of 5 runs of each), on a 2-core machine
-- that other jobs kept busy (load average about 12), about 10 s a run. The queuing is clear and steady: on a
-- simulated cuda:0 the clock alone saw 0.06 ms for what took 600 ms with
-- synchronize() (on the cpu, without a GPU, the clock alone saw 541 ms:
-- each op is done when it returns). The rest moved from run to run with
-- the other jobs' load, over three runs on 2 simulated GPUs:
--   GPU1 time 103..154 ms, GPU2 time 99..111 ms, GPU1 & GPU2 142..200 ms:
--   both at once took 63%, 74% and 93% of the two in sequence (two
--   devices need two idle cores to run at once; here they seldom were);
--   Run on GPU1 66..163 ms, Copy to CPU 5..20 ms, run and copy together
--   19% to 148% of the run then the copy: the noise is larger than the
--   copies.
torch = torch or require("torch")
d2l = d2l or require("d2l")

local QUICK = os.getenv("GSHELL_EXAMPLE_QUICK") == "1" or (arg and arg[1] == "quick")
local N = math.tointeger(tonumber(arg and arg[1]) or 512)
local REPS = math.tointeger(tonumber(arg and arg[2]) or 10)
if QUICK then N, REPS = 128, 4 end

-- Waits for the work queued on `dev` (nothing to wait for on the cpu: each
-- op there is done when it returns).
local function sync(dev)
  if dev == nil then
    torch.cuda.synchronize()
  elseif dev.type == "cuda" then
    torch.cuda.synchronize(dev)
  end
end

-- The book's `with d2l.Benchmark('label'):` scopes, repeated: the best of
-- TRIES runs of fn, in seconds, each started on idle devices (this machine
-- is shared: the best run is the least disturbed one).
local TRIES = QUICK and 1 or 5
local function timed(label, fn)
  local best = math.huge
  for _ = 1, TRIES do
    sync()
    local t0 = torch.clock()
    fn()
    best = math.min(best, torch.clock() - t0)
  end
  print(string.format("%-38s %9.2f ms", label, best * 1e3))
  return best
end

-- %% 13.2: asynchronous computation
local device = d2l.try_gpu()
print(string.format("-- 13.2: %d products of %dx%d matrices on %s", REPS, N, N, d2l.device_name(device)))
local function products(dev)
  local b
  for _ = 1, REPS do
    local a = torch.randn(N, N, { device = dev })
    b = a:mm(a)
  end
  return b
end
products(device); sync(device)                       -- warm-up
timed("cpu", function() products("cpu") end)
timed(d2l.device_name(device) .. ", clock only", function() products(device) end)
timed(d2l.device_name(device) .. ", clock around synchronize()", function()
  products(device)
  sync(device)
end)

-- The book's small graph: the host queues x, y and z and goes on; printing
-- z waits for them.
local x = torch.ones(1, 2, { device = device })
local y = torch.ones(1, 2, { device = device })
local z = x * y + 2
print("z =", z)

-- %% 13.3: automatic parallelism on two devices
local d0, d1 = d2l.try_gpu(0), d2l.try_gpu(1)
local two = d0.type == "cuda" and d1.type == "cuda"
print(string.format("-- 13.3: %d products on %s and on %s", REPS, d2l.device_name(d0), d2l.device_name(d1)))
if not two then print("(fewer than two GPUs: both runs share " .. d2l.device_name(d1) .. ", so they cannot overlap)") end

local function run(X)
  local r = {}
  for i = 1, REPS do r[i] = X:mm(X) end
  return r
end
local x_gpu1 = torch.rand(N, N, { device = d0 })
local x_gpu2 = torch.rand(N, N, { device = d1 })
run(x_gpu1); run(x_gpu2)                              -- warm up both devices
sync(d0); sync(d1)
local t1 = timed("GPU1 time", function() run(x_gpu1); sync(d0) end)
local t2 = timed("GPU2 time", function() run(x_gpu2); sync(d1) end)
local t12 = timed("GPU1 & GPU2", function()
  run(x_gpu1)                                         -- queued on d0, returns at once
  run(x_gpu2)                                         -- queued on d1 while d0 computes
  sync()
end)
if two then
  print(string.format("both at once took %.0f%% of the two runs in sequence", 100 * t12 / (t1 + t2)))
end

-- %% 13.3: computation and communication
-- y:to("cpu") waits only for the product that made y (and the work queued
-- before it), so copying the first products to the host overlaps with the
-- device computing the next ones.
local function copy_to_cpu(list, non_blocking)
  local r = {}
  for i, t in ipairs(list) do r[i] = t:to("cpu", { non_blocking = non_blocking }) end
  return r
end
local ys
local t_run = timed("Run on GPU1", function() ys = run(x_gpu1); sync() end)
local t_copy = timed("Copy to CPU", function() copy_to_cpu(ys); sync() end)
local ys_cpu
local t_both = timed("Run on GPU1 and copy to CPU", function()
  ys = run(x_gpu1)
  ys_cpu = copy_to_cpu(ys, true)
  sync()
end)
if two then
  print(string.format("run and copy together took %.0f%% of the run then the copy", 100 * t_both / (t_run + t_copy)))
end
assert(ys_cpu[REPS]:equal(ys[REPS]:cpu()), "the copy differs from the product")

-- %% pinned memory, non_blocking, and an Event
-- A copy from pinned host memory to a device with non_blocking = true is
-- queued like a kernel and returns at once; the event recorded after it
-- tells when it has run, so when the pinned buffer may be written again.
if d0.type == "cuda" then
  local host = torch.rand(N, N):pin_memory()
  local busy = run(x_gpu1)                            -- the device has work queued
  local copied = torch.cuda.Event()
  local dev_copy
  timed("non_blocking copy from pinned memory", function()
    dev_copy = host:to(d0, { non_blocking = true })
    copied:record()
  end)
  print("copy done when the call returned:", copied:query())
  copied:synchronize()                                -- now `host` may be overwritten
  print("copy done after copied:synchronize():", copied:query())
  assert(dev_copy:cpu():equal(host) and busy[REPS]:size(1) == N)
else
  print("(no GPU: copies between host memories need no pinning, and nothing is queued)")
end
