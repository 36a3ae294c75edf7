-- examples/timing.lua: the GPU chapter's exercises on speed, timed the
-- right way.
--
--   build/gshell --sim-gpus 2 examples/timing.lua [N]   (N: matrix size; default 256,
--                                                       the book used 500)
--   GSHELL_SIM_GPUS=2 LUA_CPATH="build/?.so;;" lua5.4 examples/timing.lua
--
-- The timing puzzle of seeds/001: a learner timed 100 products of 500x500
-- matrices and got "cpu 86 ms, gpu 155 ms" on the first run but "gpu 5 ms"
-- on a later one in the same Jupyter kernel. Two things were measured
-- besides the arithmetic:
--   1. start-up: the first use of a GPU creates its context, loads kernels,
--      creates the cuBLAS handle and gets fresh memory from the driver.
--      Later runs in the same process reuse all of it (the caching
--      allocator keeps freed blocks), which is why a long-lived Jupyter
--      kernel was fast and every fresh `python file.py` was slow.
--   2. asynchrony: a GPU op only queues work and returns. Stopping the
--      clock without torch.cuda.synchronize() measures the queueing, not
--      the work -- the "5 ms" was partly that.
-- So: warm up once, synchronize before reading the clock, and time a
-- loop, not one op.
--
-- Simulated GPUs queue their work as real ones do (each runs its queue on
-- its own share of the CPU's cores), so they show the method, the
-- asynchrony and the memory/transfer effects; unless --gpu-model host,
-- their times are modelled on a real GPU (a V100 by default:
-- docs/time-model.md), so the gpu rows read that GPU's speed while the cpu
-- row is this machine's. docs/time.md has the details.

-- %%
torch = torch or require("torch")
try_gpu = try_gpu or torch.try_gpu

local N = tonumber((arg or {})[1]) or 256
local REPS = 100
local gpu = try_gpu()
local on_gpu = gpu.type == "cuda"
if not on_gpu then
  print("No GPU here (start with --sim-gpus 2 to simulate two): the 'gpu' runs below use the cpu.")
elseif torch.cuda.is_simulated() then
  local note = (d2l or require("d2l")).timing_note(gpu)
  if note ~= "" then
    print("Simulated GPUs compute on the CPU's cores; the gpu rows are" .. note:gsub("^ %((.*)%)$", " %1") ..
      ", the cpu row is this machine's time.")
  else
    print("Simulated GPUs (--gpu-model host) compute on a share of the CPU's cores and keep this machine's time:")
    print("expect their timing effects, not a GPU's speed.")
  end
end

-- Runs fn once and returns the wall time in ms, waiting for the device's
-- queued work before stopping the clock.
local function timed(fn, sync_dev)
  if sync_dev and sync_dev.type == "cuda" then torch.cuda.synchronize(sync_dev) end
  local t0 = torch.clock()
  fn()
  if sync_dev and sync_dev.type == "cuda" then torch.cuda.synchronize(sync_dev) end
  return (torch.clock() - t0) * 1000
end

-- `<close>` frees each tensor at the end of the iteration, as Python's
-- reference counting does; without it the memory waits for Lua's
-- collector, and the allocator cannot reuse it yet.
local function products(dev)
  return function()
    for _ = 1, REPS do
      local A <close> = torch.ones(N, N, { device = dev })
      local B <close> = torch.ones(N, N, { device = dev })
      local C <close> = torch.matmul(A, B)
    end
  end
end

-- %% Exercise 1: CPU vs GPU, and the timing puzzle
print(string.format("\n== %d products of %dx%d matrices", REPS, N, N))
local cold = timed(products(gpu), gpu) -- first use: everything is fresh
local hits_before = on_gpu and torch.cuda.memory_stats(gpu)["num_cache_hits"] or nil
local warm = timed(products(gpu), gpu) -- same work again: warm
local cpu = timed(products("cpu"), nil)
print(string.format("cpu:                         %8.2f ms", cpu))
print(string.format("gpu, first run (cold):       %8.2f ms", cold))
print(string.format("gpu, second run (warm):      %8.2f ms", warm))
if on_gpu then
  local hits = torch.cuda.memory_stats(gpu)["num_cache_hits"] - hits_before
  print(string.format("  the warm run took %d of its %d allocations from the allocator's cache", hits, 3 * REPS))
end

-- The classic mistake: no synchronize. On a GPU this stops the clock
-- while the work is still queued, and reports a time that is too small.
local unsynced = (function()
  local t0 = torch.clock()
  products(gpu)()
  return (torch.clock() - t0) * 1000
end)()
torch.cuda.synchronize()
local note = not on_gpu and "  (the cpu does not queue: nothing to wait for)"
  or "  <- only the time to queue the work"
print(string.format("gpu, no synchronize (wrong): %8.2f ms%s", unsynced, note))

-- A tiny task: launching and bookkeeping dominate; the GPU does not help.
local tiny_cpu = timed(function() for _ = 1, REPS do local _ = torch.ones(4, 4):matmul(torch.ones(4, 4)) end end)
local tiny_gpu = timed(function()
  for _ = 1, REPS do local _ = torch.ones(4, 4, { device = gpu }):matmul(torch.ones(4, 4, { device = gpu })) end
end, gpu)
print(string.format("tiny 4x4 products: cpu %.2f ms, gpu %.2f ms", tiny_cpu, tiny_gpu))

-- %% Exercise 3: 1000 products of 100x100 matrices, logging the Frobenius norm
print("\n== logging the Frobenius norm of 1000 products of 100x100 matrices")
torch.manual_seed(0)
local A = torch.rand(100, 100, { device = gpu }) / 50
torch.cuda.reset_transfers()
local one_by_one = timed(function()
  local log = {}
  for i = 1, 1000 do log[i] = A:matmul(A):norm():item() end -- a copy to the host every step
end, gpu)
local each = torch.cuda.transfers().d2h.count
torch.cuda.reset_transfers()
local on_device = timed(function()
  local log = torch.zeros(1000, { device = gpu })
  for i = 1, 1000 do log[i] = A:matmul(A):norm() end    -- stays on the device
  local values = log:tolist()                            -- one copy at the end
end, gpu)
local once = torch.cuda.transfers().d2h.count
print(string.format("item() every step:        %8.2f ms, %4d device-to-host copies", one_by_one, each))
print(string.format("log on device, move once: %8.2f ms, %4d device-to-host copies", on_device, once))
if not on_gpu then print("(on the cpu nothing is copied; with a GPU the first way copies 1000 times)") end

-- %% Exercise 4: two products on two GPUs at once vs one after the other on one
if torch.cuda.device_count() >= 2 then
  print("\n== two products: two GPUs vs one GPU")
  local X0 = torch.rand(N, N, { device = "cuda:0" })
  local X1 = torch.rand(N, N, { device = "cuda:1" })
  local X1on0 = X1:to("cuda:0")
  local function pair(a, b)
    for _ = 1, 10 do
      local _ = a:matmul(a) -- queued on a's device
      local _ = b:matmul(b) -- queued on b's: on two real GPUs the two run at the same time
    end
  end
  pair(X0, X1) -- warm up both devices
  local function wall(fn)
    torch.cuda.synchronize()
    local t0 = torch.clock()
    fn()
    torch.cuda.synchronize() -- no argument: waits for every device
    return (torch.clock() - t0) * 1000
  end
  local two = wall(function() pair(X0, X1) end)
  local one = wall(function() pair(X0, X1on0) end)
  print(string.format("two GPUs: %.2f ms, one GPU: %.2f ms (%.2fx)", two, one, one / two))
end
