-- examples/exercise3_log_norms.lua: the GPU chapter's exercise 3.
-- "Measure the time to compute many matrix-matrix products of 100x100
-- matrices and log the Frobenius norm of each result one at a time, versus
-- keeping a log on the GPU and transferring only the final result."
--
--   build/gshell --sim-gpus 2 examples/exercise3_log_norms.lua [STEPS]
--   build/gshell examples/exercise3_log_norms.lua                (CPU only)
--
-- item() copies a value to the host, so it waits for the GPU at every
-- step; torch.stack of the norms keeps them on the device and one :cpu()
-- at the end waits once. (Timing kept simple; the asynchronous-devices
-- issue adds the queue-level view.) STEPS defaults to 200 (the book: 1000).
torch = torch or require("torch")
try_gpu = try_gpu or torch.try_gpu

local steps = tonumber(arg and arg[1]) or 200
local dev = try_gpu()
torch.manual_seed(0)
local A = torch.rand(100, 100, { device = dev }) / 50

local function timed(fn)
  torch.cuda.synchronize()
  local t0 = torch.clock()
  local r = fn()
  torch.cuda.synchronize()
  return r, torch.clock() - t0
end

-- one at a time: every norm read back with item()
local log1, t1 = timed(function()
  local log, M = {}, A
  for i = 1, steps do
    M = M:matmul(A)
    log[i] = torch.linalg.norm(M):item()
  end
  return log
end)

-- on the device: norms stacked there, one copy at the end
local log2, t2 = timed(function()
  local norms, M = {}, A
  for i = 1, steps do
    M = M:matmul(A)
    norms[i] = torch.linalg.norm(M)
  end
  return torch.stack(norms):cpu():tolist()
end)

print(string.format("%d steps on %s: item() each step %.1f ms, log on the device %.1f ms", steps,
  tostring(dev), t1 * 1e3, t2 * 1e3))
for i = 1, steps do
  assert(math.abs(log1[i] - log2[i]) <= 1e-5 * math.max(1, math.abs(log1[i])), "logs differ at " .. i)
end
print("both logs agree; first norms:", string.format("%.4g %.4g %.4g", log1[1], log1[2], log1[3]))
