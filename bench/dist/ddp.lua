-- bench/dist/ddp.lua: one DDP training step of a 4-layer MLP with
-- 1024-wide layers (4.2 M parameters, 16.8 MB of float32 gradients), at
-- a fixed global batch. Run with 1 and 2 ranks:
--   mpirun -np 1 build/gshell bench/dist/ddp.lua     (the global batch on one rank)
--   mpirun -np 2 build/gshell bench/dist/ddp.lua     (half each)
-- It times, on every rank at once:
--   step      a DDP step (forward, backward with the gradient all-reduces, SGD)
--   compute   the same step without DDP (no communication)
--   comm      all-reducing the same buckets alone, one after another
-- and reports hidden = 1 - (step - compute) / comm: the share of the
-- communication that ran while backward was still computing.
local dist, nn = torch.distributed, torch.nn
dist.init_process_group()
local r, N = dist.get_rank(), dist.get_world_size()
local GLOBAL = tonumber(os.getenv("BENCH_GLOBAL_BATCH") or "256")
local b = GLOBAL // N

local function mlp()
  torch.manual_seed(0)
  return nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                       nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))
end
torch.manual_seed(1)
local x, y = torch.randn(b, 1024), torch.randn(b, 1024)
local lossf = nn.MSELoss()

local function median_time(step, reps)
  step(); step() -- warm-up
  local ts = {}
  for i = 1, reps do
    dist.barrier()
    local t0 = torch.clock()
    step()
    ts[i] = torch.clock() - t0
  end
  table.sort(ts)
  local tt = torch.tensor({ ts[(reps + 1) // 2] }, { dtype = torch.float64 })
  dist.all_reduce(tt, { op = "max" }) -- the slowest rank sets the pace
  return tt:item()
end

local REPS = tonumber(os.getenv("BENCH_REPS") or "7")
local plain = mlp()
local popt = torch.optim.SGD(plain:parameters(), { lr = 1e-3 })
local compute = median_time(function()
  popt:zero_grad(); lossf(plain(x), y):backward(); popt:step()
end, REPS)

local ddp = nn.parallel.DistributedDataParallel(mlp())
local dopt = torch.optim.SGD(ddp:parameters(), { lr = 1e-3 })
local step = median_time(function()
  dopt:zero_grad(); lossf(ddp(x), y):backward(); dopt:step()
end, REPS)

local comm = 0
if N > 1 then
  comm = median_time(function()
    for _, bk in ipairs(ddp._buckets) do dist.all_reduce(bk.flat, { op = "avg" }) end
  end, REPS)
end

if r == 0 then
  print(string.format("ddp_ranks %d", N))
  print(string.format("ddp_global_batch %d", GLOBAL))
  print(string.format("ddp_buckets %d", #ddp._buckets))
  print(string.format("ddp_step_%dranks %.2f ms", N, step * 1e3))
  print(string.format("ddp_compute_%dranks %.2f ms", N, compute * 1e3))
  if N > 1 then
    print(string.format("ddp_comm_%dranks %.2f ms", N, comm * 1e3))
    local hidden = 1 - (step - compute) / comm
    print(string.format("ddp_hidden_share %.2f", math.max(0, math.min(1, hidden))))
  end
end
dist.destroy_process_group()
