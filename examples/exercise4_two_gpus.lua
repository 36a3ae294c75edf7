-- examples/exercise4_two_gpus.lua: the GPU chapter's exercise 4.
-- "Measure how much time it takes to perform two matrix-matrix products on
-- two GPUs at the same time versus in sequence on one GPU."
--
--   build/gshell --sim-gpus 2 examples/exercise4_two_gpus.lua [N]
--   build/gshell examples/exercise4_two_gpus.lua               (CPU only)
--
-- Work is queued on each device and the devices run concurrently, so the
-- two products on two devices can take about the time of one. Simulated
-- devices share the host's cores, which limits what they can show. With
-- fewer than two GPUs, try_gpu(1) is the CPU and both variants run there.
torch = torch or require("torch")
try_gpu = try_gpu or torch.try_gpu

local N = tonumber(arg and arg[1]) or 256
local d0, d1 = try_gpu(0), try_gpu(1)
torch.manual_seed(0)
local A0 = torch.rand(N, N, { device = d0 })
local B0 = torch.rand(N, N, { device = d0 })
local A1, B1 = A0:to(d1), B0:to(d1)

local function timed(fn)
  fn() -- warm up
  torch.cuda.synchronize()
  local t0 = torch.clock()
  local r = table.pack(fn())
  torch.cuda.synchronize()
  return torch.clock() - t0, table.unpack(r, 1, r.n)
end

local t_one, C, D = timed(function() return A0:matmul(A0), B0:matmul(B0) end)
local t_two, C1, D1 = timed(function() return A0:matmul(A0), B1:matmul(B1) end)
print(string.format("two %dx%d products: in sequence on %s %.2f ms; on %s and %s %.2f ms", N, N,
  tostring(d0), t_one * 1e3, tostring(d0), tostring(d1), t_two * 1e3))
print("results on", C1.device, "and", D1.device)
assert(torch.allclose(C, C1) and torch.allclose(D, D1:to(d0)), "results differ")
print("same results either way")
