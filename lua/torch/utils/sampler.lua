-- torch.utils.data.DistributedSampler(dataset[, {num_replicas =, rank =,
-- shuffle = true, seed = 0, drop_last = false}]): the part of a dataset
-- one rank reads, with PyTorch's assignment: the epoch's order (1..n, or
-- a permutation drawn from seed + epoch, the same on every rank) is
-- padded by repeating its start until it divides evenly (or cut, with
-- drop_last), and rank r takes positions r+1, r+1+N, r+1+2N, ... (ranks
-- 0-based, indices 1-based). sampler:set_epoch(e) before each epoch
-- gives a new permutation. The permutation is gshell's own (a splitmix64
-- stream, leaving torch's and math's generators untouched), so the
-- numbers differ from PyTorch's; the assignment rule is the same.
local torch = require("torch")
local fail = require("torch.utils.errors").fail

local S = {}
S.__index = S
S.__name = "DistributedSampler"

local function dataset_len(ds)
  return require("torch.utils.data").dataset_len(ds)
end

local function new(_, dataset, opts)
  opts = opts or {}
  if type(opts) ~= "table" then fail("DistributedSampler: options must be a table, got " .. type(opts)) end
  require("torch.utils.errors").check_options(opts, "DistributedSampler",
    { "num_replicas", "rank", "shuffle", "seed", "drop_last" })
  local dist = torch.distributed
  local function from_group(what)
    if not dist.is_initialized() then
      fail("DistributedSampler: " .. what .. " was not given and no process group is initialized (call "
        .. "torch.distributed.init_process_group() or pass num_replicas and rank)")
    end
    return what == "num_replicas" and dist.get_world_size() or dist.get_rank()
  end
  local nr = opts.num_replicas == nil and from_group("num_replicas") or opts.num_replicas
  local rank = opts.rank == nil and from_group("rank") or opts.rank
  if math.type(nr) ~= "integer" or nr < 1 then
    fail("DistributedSampler: num_replicas must be a positive integer, got " .. tostring(nr))
  end
  if math.type(rank) ~= "integer" or rank < 0 or rank >= nr then
    fail(string.format("DistributedSampler: invalid rank %s, rank should be in the interval [0, %d]", tostring(rank),
      nr - 1))
  end
  local seed = opts.seed == nil and 0 or opts.seed
  if math.type(seed) ~= "integer" then fail("DistributedSampler: seed must be an integer, got " .. tostring(seed)) end
  local n = dataset_len(dataset)
  local drop_last = opts.drop_last and true or false
  local num_samples
  if drop_last and n % nr ~= 0 then num_samples = -((-(n - nr)) // nr) -- ceil((n - N) / N)
  else num_samples = -((-n) // nr) end                                  -- ceil(n / N)
  if num_samples < 0 then num_samples = 0 end
  return setmetatable({
    dataset = dataset, num_replicas = nr, rank = rank, epoch = 0, seed = seed,
    shuffle = opts.shuffle ~= false, drop_last = drop_last,
    num_samples = num_samples, total_size = num_samples * nr,
  }, S)
end
setmetatable(S, { __call = new })

function S:set_epoch(epoch)
  if math.type(epoch) ~= "integer" then fail("DistributedSampler:set_epoch: expected an integer epoch") end
  self.epoch = epoch
end

function S:__len() return self.num_samples end

-- splitmix64 (Lua integers wrap like uint64; >> is a logical shift)
local function generator(seed)
  local state = seed
  return function(n) -- uniform in [1, n]
    state = state + 0x9E3779B97F4A7C15
    local z = state
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    z = z ~ (z >> 31)
    return (z >> 11) % n + 1
  end
end

-- This rank's indices (1-based) for the current epoch.
function S:indices()
  local n = dataset_len(self.dataset)
  local order = {}
  for i = 1, n do order[i] = i end
  if self.shuffle then
    local rand = generator(self.seed + self.epoch)
    for i = n, 2, -1 do
      local j = rand(i)
      order[i], order[j] = order[j], order[i]
    end
  end
  if not self.drop_last then
    local k = 1
    while #order < self.total_size and n > 0 do
      order[#order + 1] = order[k]
      k = k % n + 1
    end
  end
  local mine = {}
  for pos = self.rank + 1, self.total_size, self.num_replicas do mine[#mine + 1] = order[pos] end
  return mine
end

function S:iter()
  local list, i = self:indices(), 0
  return function()
    i = i + 1
    return list[i]
  end
end

function S:__tostring()
  return string.format("DistributedSampler(num_replicas=%d, rank=%d, shuffle=%s, num_samples=%d)", self.num_replicas,
    self.rank, tostring(self.shuffle), self.num_samples)
end

return S
