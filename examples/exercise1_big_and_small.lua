-- examples/exercise1_big_and_small.lua: the GPU chapter's exercise 1.
-- "Try a larger computation, such as multiplying large matrices, and see
-- the difference in speed between the CPU and the GPU. What about a task
-- with only a little computation?"
--
--   build/gshell --sim-gpus 2 examples/exercise1_big_and_small.lua [N]
--   build/gshell examples/exercise1_big_and_small.lua          (CPU only)
--
-- Timing is kept simple here: synchronise, read torch.clock(), run,
-- synchronise, read it again (examples/timing.lua explains why). On
-- simulated GPUs the device time is the host's, so expect no speed-up:
-- the point is the method. N is the big matrix size (default 256).
torch = torch or require("torch")
try_gpu = try_gpu or torch.try_gpu

local N = tonumber(arg and arg[1]) or 256
local dev = try_gpu()

-- Seconds per call of fn(), devices synchronised around the loop.
local function time(fn, reps)
  fn() -- warm up: first calls pay for lazy set-up
  torch.cuda.synchronize()
  local t0 = torch.clock()
  for _ = 1, reps do fn() end
  torch.cuda.synchronize()
  return (torch.clock() - t0) / reps
end

local function report(what, cpu_s, dev_s)
  print(string.format("%-28s cpu %9.3f ms   %s %9.3f ms   ratio %.2f", what, cpu_s * 1e3,
    tostring(dev), dev_s * 1e3, cpu_s / dev_s))
end

print("device:", dev)
local a_cpu = torch.rand(N, N)
local a_dev = a_cpu:to(dev)
report(string.format("big: %dx%d matmul", N, N),
  time(function() return a_cpu:matmul(a_cpu) end, 5),
  time(function() return a_dev:matmul(a_dev) end, 5))

-- a small task: the fixed cost of launching work dominates
local s_cpu = torch.rand(4, 4)
local s_dev = s_cpu:to(dev)
report("small: 4x4 add",
  time(function() return s_cpu + s_cpu end, 200),
  time(function() return s_dev + s_dev end, 200))

-- the results agree wherever they were computed
local diff = (a_cpu:matmul(a_cpu) - a_dev:matmul(a_dev):cpu()):abs():max():item()
print(string.format("largest difference cpu vs %s: %.3g", tostring(dev), diff))
assert(diff < 1e-2 * N, "results differ")
