-- examples/exercise4_two_gpus.lua: the GPU chapter's exercise 4.
-- "Measure how much time it takes to perform two matrix-matrix products on
-- two GPUs at the same time versus in sequence on one GPU. Hint: you
-- should see almost linear scaling."
--
--   build/gshell --sim-gpus 2 examples/exercise4_two_gpus.lua [N] [timeline.svg]
--   build/gshell examples/exercise4_two_gpus.lua               (CPU only)
--
-- An op on a GPU is queued on that device and returns at once, so the host
-- queues the product for cuda:0, then the one for cuda:1, and both devices
-- compute at the same time; torch.cuda.synchronize() waits for both. On
-- one device the two products run one after the other. Each simulated GPU
-- keeps its own modelled clock (a V100's unless --gpu-model says otherwise;
-- docs/time-model.md), so two of them scale as two real GPUs do: the
-- times printed are the modelled GPUs', and the values are computed on
-- this machine's cores.
-- With the profiler (torch.profiler), the two-device run is also drawn as
-- a timeline, one lane per device: to the SVG file given as the second
-- argument, or to exercise4_timeline.svg in the system's temporary
-- directory. docs/img/exercise4_two_devices.svg is one (N = 1024).
-- With fewer than two GPUs, try_gpu(1) is the cpu or try_gpu(0) is, and
-- the script says so.
torch = torch or require("torch")
try_gpu = try_gpu or torch.try_gpu

local N = tonumber(arg and arg[1]) or 512
local REPS = 4 -- products per device in each timed run
local d0, d1 = try_gpu(0), try_gpu(1)
local two_gpus = d0.type == "cuda" and d1.type == "cuda"
if not two_gpus then
  print(string.format("(fewer than two GPUs: the second device is %s, so there is little to gain)", tostring(d1)))
end
torch.manual_seed(0)
local A0 = torch.rand(N, N, { device = d0 })
local B0 = torch.rand(N, N, { device = d0 })
local B1 = B0:to(d1)

-- REPS products of a with itself and of b with itself, queued alternately.
local function products(a, b)
  local ra, rb
  for _ = 1, REPS do
    ra = a:matmul(a)
    rb = b:matmul(b)
  end
  return ra, rb
end

local function kernels(d)
  if d.type ~= "cuda" then return 0 end
  return torch.cuda.memory_stats(d).num_kernels or 0
end

-- Wall ms of fn(), both devices idle before and after, the kernels each
-- device ran, and fn's results.
local function timed(fn)
  torch.cuda.synchronize()
  local k0, k1 = kernels(d0), kernels(d1)
  local t0 = torch.clock()
  local r1, r2 = fn()
  torch.cuda.synchronize() -- no argument: waits for every device
  local t = (torch.clock() - t0) * 1e3
  return t, kernels(d0) - k0, kernels(d1) - k1, r1, r2
end

local one = function() return products(A0, B0) end -- both on d0, in sequence
local two = function() return products(A0, B1) end -- one on each device
timed(two) -- warm up both devices
local t_one, _, _, C, D = timed(one)
local t_two, k0, k1, C2, D2 = timed(two)
-- on simulated GPUs that model real ones, the times are those GPUs'
print(string.format("2 x %d products of %dx%d matrices%s:", REPS, N, N, (d2l or require("d2l")).timing_note({ d0, d1 })))
print(string.format("  %-30s %8.1f ms", "in sequence on " .. tostring(d0) .. ":", t_one))
-- a ratio below 1 is a slowdown (a busy or single-core host): say so
local ratio = t_one / t_two
print(string.format("  %-30s %8.1f ms   (%s)", "on " .. tostring(d0) .. " and " .. tostring(d1) .. " at once:",
  t_two, ratio >= 1 and string.format("%.2fx faster", ratio) or string.format("%.2fx slower", 1 / ratio)))
if two_gpus then
  print(string.format("  kernels run during the second: %d on %s, %d on %s", k0, tostring(d0), k1, tostring(d1)))
end

-- The results are the same wherever they were computed.
assert(torch.allclose(C, C2) and torch.allclose(D, D2:to(d0)), "results differ")
print("same results either way: " .. tostring(C2.device) .. " and " .. tostring(D2.device))

-- A timeline of the two-device run, when the profiler is there.
local have_profiler, profiler = pcall(require, "torch.profiler")
if have_profiler and two_gpus then
  local path = arg and arg[2] or ((os.getenv("TMPDIR") or "/tmp") .. "/exercise4_timeline.svg")
  local prof = profiler.profile(function()
    products(A0, B1)
    torch.cuda.synchronize()
  end)
  prof:export_timeline(path, { title = string.format("exercise 4: %d products of %dx%d matrices on each of %s and %s",
    REPS, N, N, tostring(d0), tostring(d1)) })
  print("timeline of the run on two devices: " .. path)
end
