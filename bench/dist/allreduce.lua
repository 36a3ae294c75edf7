-- bench/dist/allreduce.lua: all-reduce bus bandwidth between the ranks
-- of an mpirun job, float32 tensors from 4 KiB to 256 MiB, with NCCL's
-- definitions: algbw = bytes / time, busbw = algbw * 2(N-1)/N. Rank 0
-- also measures this machine's memcpy bandwidth (a 256 MiB copy_ on the
-- cpu, one thread) for comparison. Prints `name value unit` lines.
--   mpirun -np 2 build/gshell bench/dist/allreduce.lua
local dist = torch.distributed
dist.init_process_group()
local r, N = dist.get_rank(), dist.get_world_size()

local function timeit(fn, min_time)
  fn() -- warm-up
  local iters, t = 1, 0
  while true do
    dist.barrier()
    local t0 = torch.clock()
    for _ = 1, iters do fn() end
    t = torch.clock() - t0
    -- every rank must agree on the loop count: use rank 0's time
    local tt = torch.tensor({ t }, { dtype = torch.float64 })
    dist.broadcast(tt, { src = 0 })
    t = tt:item()
    if t >= min_time or iters >= 1000 then break end
    iters = iters * 2
  end
  return t / iters
end

local kib = 4
while kib <= 256 * 1024 do
  local n = kib * 1024 // 4
  local x = torch.ones(n)
  local per = timeit(function() dist.all_reduce(x) end, 0.3)
  local algbw = kib * 1024 / per / 1e9
  if r == 0 then
    print(string.format("allreduce_%dKiB_time %.1f us", kib, per * 1e6))
    print(string.format("allreduce_%dKiB_busbw %.3f GB/s", kib, algbw * 2 * (N - 1) / N))
  end
  x = nil
  collectgarbage()
  kib = kib * 4
end

if r == 0 then
  local a, b = torch.ones(64 * 1024 * 1024), torch.empty(64 * 1024 * 1024)
  b:copy_(a)
  local t0, reps = torch.clock(), 5
  for _ = 1, reps do b:copy_(a) end
  print(string.format("memcpy_256MiB_bw %.3f GB/s", 256 * 1024 * 1024 * reps / (torch.clock() - t0) / 1e9))
end
dist.barrier()
dist.destroy_process_group()
