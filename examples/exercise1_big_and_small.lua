-- examples/exercise1_big_and_small.lua: the GPU chapter's exercise 1.
-- "Try a larger computation, such as multiplying large matrices, and see
-- the difference in speed between the CPU and the GPU. What about a task
-- with only a little computation?"
--
--   build/gshell --sim-gpus 2 examples/exercise1_big_and_small.lua [N]
--   build/gshell examples/exercise1_big_and_small.lua          (CPU only)
--
-- On a simulated GPU that models a real one (the default: a V100; see
-- docs/gpu-models.md) the GPU's column is the time that GPU would take,
-- from the time model (docs/time-model.md): its values are still computed
-- on this machine's cores, and the last row says how long that took. The
-- cpu's column is this machine's own time. With GSHELL_GPU_MODEL=host the
-- simulated GPU's times are this machine's too: then it shows the timing
-- effects below but not a GPU's speed.
--
-- The learner's code (seeds/001) timed 100 products of 500x500 matrices
-- with a clock around the loop and got puzzling numbers: the GPU slower
-- than the CPU in a fresh process, 30 times faster on a second run in
-- Jupyter. Two things hide in such a clock:
--   * asynchrony: an op on a GPU checks its arguments, queues its kernel
--     and returns. The clock stops when the work is queued, not done.
--     torch.cuda.synchronize() waits for it; a CUDA Event recorded before
--     and after the work measures it on the device itself.
--   * the cold start: the first use of a device sets it up (a context,
--     the allocator's first memory). Simulated GPUs can model that cost
--     (GSHELL_SIM_CONTEXT_MS=300, see docs/time.md).
-- The clock-only rows show the puzzle whenever the device's work takes
-- longer than the host takes to queue it: on a modelled V100 a 256x256
-- product is about 60 us, about as long as a slow host's queuing of it,
-- so the puzzle is plainest with GSHELL_GPU_MODEL=host or larger N.
-- Each row below times the same loop a different way. N is the matrix
-- size (default 256; the book used 500).
torch = torch or require("torch")
try_gpu = try_gpu or torch.try_gpu

local N = tonumber(arg and arg[1]) or 256
local REPS = 100
local dev = try_gpu()
local queued = dev.type == "cuda" -- only CUDA devices queue work
-- the real GPU the device models (nil: a real GPU, the cpu, or `host`)
local model = queued and torch.cuda.gpu_model and torch.cuda.gpu_model(dev.index or 0) or nil

-- The learner's loop: REPS products of n x n matrices of ones on d.
-- `<close>` frees each temporary at the end of its iteration (Python's
-- reference counting does the same); a freed tensor whose kernel is still
-- queued stays alive until that kernel has run.
local function products(d, n)
  return function()
    for _ = 1, REPS do
      local A <close> = torch.ones(n, n, { device = d })
      local B <close> = torch.ones(n, n, { device = d })
      local C <close> = torch.matmul(A, B)
    end
  end
end

local function ms(s) return s * 1e3 end

-- The clock around the loop, nothing else: what the learner measured.
local function clock_only(fn)
  local t0 = torch.clock()
  fn()
  return ms(torch.clock() - t0)
end

-- The clock around the loop, the devices drained before and after.
local function clock_synced(fn)
  torch.cuda.synchronize()
  local t0 = torch.clock()
  fn()
  torch.cuda.synchronize()
  return ms(torch.clock() - t0)
end

-- The device's own measure: events recorded on its stream around the
-- work; elapsed_time reads milliseconds once the second event has run.
local function events(fn)
  local start = torch.cuda.Event({ enable_timing = true })
  local stop = torch.cuda.Event({ enable_timing = true })
  start:record()
  fn()
  stop:record()
  stop:synchronize()
  return start:elapsed_time(stop)
end

local function row(what, cpu_ms, dev_ms, note)
  print(string.format("  %-34s %10s %10s%s", what, cpu_ms and string.format("%.2f ms", cpu_ms) or "-",
    dev_ms and string.format("%.2f ms", dev_ms) or "-", note and ("   " .. note) or ""))
end

local function compare(n)
  local cpu_work, dev_work = products("cpu", n), products(dev, n)
  print(string.format("\n%-36s %10s %10s", string.format("%d products of %dx%d matrices", REPS, n, n), "cpu",
    tostring(dev)))
  -- first run in this process: pays for setting the device up
  row("first run, clock only", clock_only(cpu_work), clock_only(dev_work), queued and "<- the learner's cold run" or nil)
  torch.cuda.synchronize() -- let the first run finish before the next row
  local cpu_q, dev_q = clock_only(cpu_work), clock_only(dev_work)
  local drain
  if queued then
    local t0 = torch.clock()
    torch.cuda.synchronize()
    drain = ms(torch.clock() - t0)
  end
  row("warm, clock only", cpu_q, dev_q, queued and "<- only the time to queue the work" or nil)
  if queued then
    row("  ...then synchronize() waited", nil, drain, "for the work still queued")
  end
  local r0 = torch._real_clock()
  local cpu_s, dev_s = clock_synced(cpu_work), clock_synced(dev_work)
  local real = ms(torch._real_clock() - r0) - cpu_s
  row("warm, clock around synchronize()", cpu_s, dev_s, "<- the right way")
  if queued then row("warm, CUDA events (device time)", nil, events(dev_work)) end
  if model then row("  (computing it here took)", nil, real, "this machine's real time, not the " .. model.key:upper() .. "'s") end
  return cpu_s, dev_s
end

print("device: " .. tostring(dev) .. (model and string.format(" (simulated, modelled on a %s: its times are that GPU's)",
  model.name) or queued and torch.cuda.is_simulated()
  and string.format(" (simulated: the %d simulated GPUs share this machine's cores)", torch.cuda.device_count())
  or ""))
if not queued then
  print("(no GPU: both columns are the cpu, and nothing is queued, so every way of timing agrees)")
end

local big_cpu, big_dev = compare(N)
local small_cpu, small_dev = compare(4)

if model then
  print(string.format("\nThe %dx%d products: the %s took %.2f ms, the cpu %.2f ms (%.1f times %s).", N, N,
    model.key:upper(), big_dev, big_cpu, big_dev < big_cpu and big_cpu / big_dev or big_dev / big_cpu,
    big_dev < big_cpu and "faster" or "slower"))
  print(string.format("The 4x4 ones: the %s took %.2f ms, the cpu %.2f ms. Each kernel pays a launch (%.0f us on",
    model.key:upper(), small_dev, small_cpu, model.launch * 1e6))
  print(string.format("the device, %.0f us in the host's driver), far more than a 4x4 product's arithmetic:",
    model.host_launch * 1e6))
  print("a GPU cannot help there. torch.cuda.explain(fn) says which ops are launch-bound.")
else
  print("\nA big product keeps a device busy long enough to pay for queuing it; a")
  print("4x4 one costs less to compute than to queue, so a GPU cannot help there.")
  if queued and torch.cuda.is_simulated() then
    print("A simulated GPU with no model (host) has a fixed share of this machine's cores, as a")
    print("real GPU has its own: it shows the timing effects, not a GPU's speed.")
  end
end

-- the results agree wherever they were computed: ones(n, n) @ ones(n, n) = n
for _, d in ipairs({ torch.device("cpu"), dev }) do
  local C = torch.ones(N, N, { device = d }):matmul(torch.ones(N, N, { device = d }))
  assert(C:eq(N):all():item(), "wrong product on " .. tostring(d))
end
print(string.format("\nevery entry of the product is %d on the cpu and on %s", N, tostring(dev)))
