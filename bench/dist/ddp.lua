-- bench/dist/ddp.lua: DDP training steps of a 4-layer MLP with 1024-wide
-- layers (4.2 M parameters, 16.8 MB of float32 gradients) at a fixed
-- global batch, and how much of the gradient communication overlaps the
-- backward pass. Run with 1 and 2 ranks:
--   mpirun -np 1 build/gshell bench/dist/ddp.lua     (the global batch on one rank)
--   mpirun -np 2 build/gshell bench/dist/ddp.lua     (half each)
--
-- Two bucket layouts: PyTorch's defaults (bucket_cap_mb = 25 with a
-- 1 MiB first bucket: 2 buckets here, the last layer alone, then the
-- other three together, so the second can only start when backward is
-- over) and bucket_cap_mb = 4 (one bucket per layer: three of the four
-- can start while backward is still computing the layers below).
--
-- Overlap, measured inside each step from its own timeline (so the load
-- of a shared machine moves both sides alike): DDP records when backward
-- finished computing (its last gradient was accumulated) and, per bucket,
-- when its all-reduce's payload ran on the communication thread
-- (work:_timing(): agreed .. finished, after every rank had arrived).
--   comm      the payload time of all buckets, summed
--   overlap   the part of it before backward finished, over comm: the
--             share of communication hidden behind backward's compute
--             (the definition of Holistic Trace Analysis's
--             communication/computation overlap), seen from the rank
--             whose backward ended last in each step (it sets the
--             pace); the median over the steps
-- Steps of the plain module (no DDP) and all-reduces of the same buckets
-- alone are timed in the same loop, interleaved, for the wall-clock view:
--   step      a DDP step (forward, backward with the all-reduces, SGD)
--   compute   the same step without DDP
--   comm_alone  the buckets all-reduced one after another, nothing else
-- Medians over the repetitions; every rank's value, the slowest reported.
local dist, nn = torch.distributed, torch.nn
dist.init_process_group()
local r, N = dist.get_rank(), dist.get_world_size()
local GLOBAL = tonumber(os.getenv("BENCH_GLOBAL_BATCH") or "256")
local REPS = tonumber(os.getenv("BENCH_REPS") or "15")
local b = GLOBAL // N

local function mlp()
  torch.manual_seed(0)
  return nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                       nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))
end
torch.manual_seed(1)
local x, y = torch.randn(b, 1024), torch.randn(b, 1024)
local lossf = nn.MSELoss()

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s[(#s + 1) // 2]
end

-- the slowest rank's value
local function slowest(v)
  local t = torch.tensor({ v }, { dtype = torch.float64 })
  dist.all_reduce(t, { op = "max" })
  return t:item()
end

local function timed(fn)
  dist.barrier()
  local t0 = torch.clock()
  fn()
  return torch.clock() - t0
end

-- The share of [a, b] before t.
local function before(a, b, t) return math.max(0, math.min(b, t) - a) end

local function run(cap)
  local plain = mlp()
  local popt = torch.optim.SGD(plain:parameters(), { lr = 1e-3 })
  local ddp = nn.parallel.DistributedDataParallel(mlp(), { bucket_cap_mb = cap })
  local dopt = torch.optim.SGD(ddp:parameters(), { lr = 1e-3 })
  local function plain_step() popt:zero_grad(); lossf(plain(x), y):backward(); popt:step() end
  local function ddp_step() dopt:zero_grad(); lossf(ddp(x), y):backward(); dopt:step() end
  local function comm_alone()
    for _, bk in ipairs(ddp._buckets) do dist.all_reduce(bk.flat, { op = "avg" }) end
  end
  plain_step(); ddp_step(); comm_alone() -- warm-up
  local steps, computes, alones, comms, hiddens = {}, {}, {}, {}, {}
  for i = 1, REPS do
    computes[i] = timed(plain_step)
    steps[i] = timed(ddp_step)
    local last = ddp.stats.last
    local comm, hidden = 0, 0
    for _, t in pairs(last.buckets) do
      comm = comm + (t.finished - t.agreed)
      hidden = hidden + before(t.agreed, t.finished, last.backward_end)
    end
    -- The step's pace is set by the rank whose backward ends last: a rank
    -- that got ahead only waits for it, and no payload can start before
    -- every rank has arrived. Its share is the step's. (torch.clock() is
    -- CLOCK_MONOTONIC, one clock for every process of a machine: this
    -- bench runs its ranks on one machine.)
    local mine = torch.tensor({ last.backward_end, hidden, comm }, { dtype = torch.float64 })
    local all = {}
    for q = 1, N do all[q] = torch.zeros(3, { dtype = torch.float64 }) end
    dist.all_gather(all, mine)
    local pace = all[1]:tolist()
    for q = 2, N do
      local v = all[q]:tolist()
      if v[1] > pace[1] then pace = v end
    end
    comms[i], hiddens[i] = pace[3], pace[2]
    alones[i] = N > 1 and timed(comm_alone) or 0
  end
  -- overlap: the median over the steps (a step where the shared machine
  -- stalled one rank moves a ratio of sums, not the median)
  local shares = {}
  for i = 1, REPS do shares[i] = comms[i] > 0 and hiddens[i] / comms[i] or 0 end
  return {
    buckets = #ddp._buckets, step = slowest(median(steps)), compute = slowest(median(computes)),
    alone = slowest(median(alones)), comm = median(comms), overlap = median(shares),
  }
end

local configs = { { name = "default", cap = 25 }, { name = "cap4", cap = 4 } }
local results = {}
for i, c in ipairs(configs) do results[i] = run(c.cap) end

if r == 0 then
  print(string.format("ddp_ranks %d", N))
  print(string.format("ddp_global_batch %d", GLOBAL))
  for i, c in ipairs(configs) do
    local q = results[i]
    local p = string.format("ddp_%s_%dranks_", c.name, N)
    print(string.format("%sbuckets %d", p, q.buckets))
    print(string.format("%sstep %.2f ms", p, q.step * 1e3))
    print(string.format("%scompute %.2f ms", p, q.compute * 1e3))
    if N > 1 then
      print(string.format("%scomm_alone %.2f ms", p, q.alone * 1e3))
      print(string.format("%scomm_in_step %.2f ms", p, q.comm * 1e3))
      print(string.format("%soverlap %.2f", p, q.overlap))
    end
  end
end
dist.destroy_process_group()
