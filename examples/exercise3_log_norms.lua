-- examples/exercise3_log_norms.lua: the GPU chapter's exercise 3.
-- "Measure the time to compute many matrix-matrix products of 100x100
-- matrices and log the Frobenius norm of each result one at a time, versus
-- keeping a log on the GPU and transferring only the final result."
--
--   build/gshell --sim-gpus 2 examples/exercise3_log_norms.lua [STEPS]
--   build/gshell examples/exercise3_log_norms.lua                (CPU only)
--
-- Work on a GPU is queued: the host runs ahead while the device computes.
-- item() needs the number on the host, so at every step the host stops and
-- waits until the device has finished everything queued so far (and then
-- copies 4 bytes). Keeping the norms on the device lets the host queue all
-- the steps at once; one copy at the end waits once. The two ways are
-- shown side by side: time, copies counted by torch.cuda.transfers(), and
-- what torch.cuda.set_sync_debug_mode('warn') reports -- one warning per
-- host wait, naming the line that waited. STEPS defaults to 200 (the
-- book: 1000).
torch = torch or require("torch")
try_gpu = try_gpu or torch.try_gpu

local steps = tonumber(arg and arg[1]) or 200
local dev = try_gpu()
torch.manual_seed(0)
local A = torch.rand(100, 100, { device = dev }) / 50

-- One at a time: every norm read back with item().
local function log_each_step(n)
  local log, M = {}, A
  for i = 1, n do
    M = M:matmul(A)
    log[i] = torch.linalg.norm(M):item() -- the host waits here, every step
  end
  return log
end

-- On the device: norms stacked there, one copy at the end.
local function log_on_device(n)
  local norms, M = {}, A
  for i = 1, n do
    M = M:matmul(A)
    norms[i] = torch.linalg.norm(M) -- stays on the device: nothing waits
  end
  return torch.stack(norms):tolist() -- the one wait, and the one copy
end

-- Runs fn(steps): its result, its wall time in ms, and the copies from
-- the device to the host it made.
local function measure(fn)
  torch.cuda.synchronize()
  torch.cuda.reset_transfers()
  local t0 = torch.clock()
  local r = fn(steps)
  torch.cuda.synchronize()
  local t = (torch.clock() - t0) * 1e3
  return r, t, torch.cuda.transfers().d2h.count
end

log_on_device(5) -- warm up: the first products set the device and its caches up
local log1, t1, copies1 = measure(log_each_step)
local log2, t2, copies2 = measure(log_on_device)

print(string.format("%d steps on %s %24s %24s", steps, tostring(dev), "item() every step", "log kept on the device"))
print(string.format("%-22s %21.1f ms %21.1f ms", "  time", t1, t2))
print(string.format("%-22s %24d %24d", "  device->host copies", copies1, copies2))

-- The sync-debug view: in 'warn' mode every wait of the host for a device
-- prints one line naming the file and line that waited and the op. Three
-- steps of each way are enough to see the pattern (the lines go to
-- stderr, as PyTorch's warnings do).
print("\ntorch.cuda.set_sync_debug_mode('warn'), three steps of each way:")
torch.cuda.set_sync_debug_mode("warn")
io.stdout:write("  item() every step:\n"); io.stdout:flush()
log_each_step(3)
io.stderr:flush()
io.stdout:write("  log kept on the device:\n"); io.stdout:flush()
log_on_device(3)
io.stderr:flush()
torch.cuda.set_sync_debug_mode("default")
if dev.type ~= "cuda" then
  print("  (no GPU: the cpu never queues work, so nothing waits and nothing is reported)")
end

for i = 1, steps do
  assert(math.abs(log1[i] - log2[i]) <= 1e-5 * math.max(1, math.abs(log1[i])), "logs differ at " .. i)
end
print(string.format("\nboth logs agree; first norms: %.4g %.4g %.4g", log1[1], log1[2], log1[3]))
