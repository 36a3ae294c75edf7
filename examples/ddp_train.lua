-- examples/ddp_train.lua: DistributedDataParallel over processes.
--
--   mpirun -np 2 build/gshell --sim-gpus 2 examples/ddp_train.lua
--   (as root Open MPI also wants --allow-run-as-root; on a machine with
--   fewer cores than ranks, --oversubscribe)
--
-- Each process is one rank: it trains the same model on its own device
-- (cuda:rank on GPUs, simulated or real, else the cpu) and on its own
-- share of every epoch (DistributedSampler). DDP broadcasts rank 0's
-- parameters at construction and averages the gradients during
-- backward(), so after every step all ranks hold the same parameters --
-- the ones a single process would reach on the whole batch.
-- Started without mpirun, it says so and trains as one plain process.
torch = torch or require("torch")
local nn, dist = torch.nn, torch.distributed

local launched = os.getenv("OMPI_COMM_WORLD_SIZE") ~= nil
if launched then
  dist.init_process_group({ backend = "mpi" })
else
  print("not started by mpirun: training as a single process, without DDP")
end
local rank = launched and dist.get_rank() or 0
local world = launched and dist.get_world_size() or 1
local n_gpu = torch.cuda.device_count()
local device = n_gpu > 0 and torch.device("cuda", rank % n_gpu) or torch.device("cpu")

torch.manual_seed(0) -- the same data on every rank; the sampler picks each rank's share
local n, d, h, k = 1536, 20, 64, 3
local centers = torch.randn(k, d) * 0.3
local labels = torch.randint(1, k + 1, { n })
local X = centers:index_select(1, labels) + torch.randn(n, d)
local data = torch.utils.data.TensorDataset(X, labels)

torch.manual_seed(1 + rank) -- different starts: DDP makes them rank 0's
local net = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, k)):to(device)
local model = launched and nn.parallel.DistributedDataParallel(net) or net
local loss = nn.CrossEntropyLoss()
local opt = torch.optim.SGD(model:parameters(), { lr = 0.2 })
local sampler = torch.utils.data.DistributedSampler(data, { num_replicas = world, rank = rank, shuffle = true, seed = 0 })
-- 256 samples per step in all: 256 / world on each rank
local loader = torch.utils.data.DataLoader(data, { batch_size = 256 // world, sampler = sampler })

for epoch = 1, 5 do
  sampler:set_epoch(epoch) -- a new shuffle, the same on every rank
  local t0 = torch.clock()
  for batch in loader do
    opt:zero_grad()
    loss(model(batch[1]:to(device)), batch[2]:to(device)):backward()
    opt:step()
  end
  local logits = torch.no_grad(function() return net(X:to(device)) end)
  local acc = torch.tensor({ logits:argmax(2):eq(labels:to(device)):float():mean():item() })
  if launched then dist.all_reduce(acc, { op = "max" }) end
  if rank == 0 then
    print(string.format("epoch %d: accuracy %.3f, %.3f s, %d ranks%s", epoch, acc:item(), torch.clock() - t0, world,
      (d2l or require("d2l")).timing_note(device)))
  end
end

-- all ranks hold the same parameters
if launched then
  local w = net:parameters()[1]:to("cpu"):clone()
  local lo, hi = w:clone(), w:clone()
  dist.all_reduce(lo, { op = "min" })
  dist.all_reduce(hi, { op = "max" })
  assert(lo:equal(hi), "ranks disagree")
  if rank == 0 then print("parameters identical on all " .. world .. " ranks") end
  dist.destroy_process_group()
end
