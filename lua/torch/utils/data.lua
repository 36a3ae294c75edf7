-- torch.utils.data: datasets and the DataLoader.
--
-- A dataset is anything with a length and a get(i) (i from 1):
--   * torch.utils.data.TensorDataset(X, y): ds:get(i) is {X[i], y[i]};
--   * a class made with torch.utils.data.Dataset:extend("Name") defining
--     Name:init(...), Name:__len() and Name:get(i);
--   * any table with a __len metamethod (or a __len field) and get(i);
--   * a plain Lua list of samples.
-- DataLoader(ds, {batch_size = 1, shuffle = false, drop_last = false,
-- collate_fn = default_collate, sampler = nil, pin_memory = false,
-- num_workers = 0}) yields batches in a generic for
-- (a sampler -- DistributedSampler, a list of indices, or anything with
-- indices() and a length -- decides the samples and their order):
--   for batch in loader do local X, y = batch[1], batch[2] ... end
--   for i, X, y in loader:enumerate() do ... end   (i from 1)
-- A data set with get_batch(indices) (TensorDataset, torchvision's data
-- sets) builds each batch itself with whole-batch tensor operations.
-- pin_memory: the batch's CPU tensors are copied to pinned memory, so
-- X:to(device, {non_blocking = true}) returns at once. num_workers is
-- accepted for PyTorch's code and ignored: batches are built in this
-- thread (a few whole-batch operations need no worker processes).
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local options = require("torch.utils.errors").options
local class = require("torch.utils.class")

local D = {}

local function is_tensor(v) return torch.is_tensor(v) end

-- ------------------------------------------------------------- datasets

local function dataset_len(ds)
  local mt = getmetatable(ds)
  if type(mt) == "table" and mt.__len ~= nil then return mt.__len(ds) end
  if type(ds) == "table" then
    local f = rawget(ds, "__len")
    if type(f) == "function" then return f(ds) end
    if math.type(f) == "integer" then return f end
    if type(ds.len) == "function" then return ds:len() end
    return #ds
  end
  fail("a dataset must be a table with a length (__len) and get(i), got " .. type(ds))
end
D.dataset_len = dataset_len

local function dataset_get(ds, i)
  local get = ds.get
  if type(get) == "function" then return get(ds, i) end
  return ds[i]
end

-- Base class for user datasets.
local Dataset = class.extend(nil, "Dataset")
D.Dataset = Dataset

-- local MyData = torch.utils.data.Dataset:extend("MyData")
function Dataset:extend(name) return class.extend(self, name or "Dataset") end

function Dataset:init() end
function Dataset:__len()
  fail(getmetatable(self).__name .. " must define __len (the number of samples)")
end
function Dataset:get()
  fail(getmetatable(self).__name .. " must define get(i) (the i-th sample, i from 1)")
end

-- TensorDataset(t1, t2, ...): sample i is {t1[i], t2[i], ...} (rows along
-- dim 1); every tensor must have the same size along dim 1.
local TensorDataset = Dataset:extend("TensorDataset")
D.TensorDataset = TensorDataset

function TensorDataset:init(...)
  local ts = table.pack(...)
  if ts.n == 0 then fail("TensorDataset: expected at least one tensor") end
  for i = 1, ts.n do
    if not is_tensor(ts[i]) then
      fail(string.format("TensorDataset: argument %d is not a tensor (got %s)", i, type(ts[i])))
    end
    if ts[i]:dim() == 0 then fail("TensorDataset: tensors must have at least one dimension") end
    if ts[i]:size(1) ~= ts[1]:size(1) then
      fail(string.format("Size mismatch between tensors: tensor 1 has %d rows, tensor %d has %d",
        ts[1]:size(1), i, ts[i]:size(1)))
    end
  end
  self.tensors = { table.unpack(ts, 1, ts.n) }
end

function TensorDataset:__len() return self.tensors[1]:size(1) end

function TensorDataset:get(i)
  local n = self.tensors[1]:size(1)
  if math.type(i) ~= "integer" or i < 1 or i > n then
    fail(string.format("TensorDataset:get: index %s out of range 1..%d", tostring(i), n))
  end
  local r = {}
  for k, t in ipairs(self.tensors) do r[k] = t[i] end
  return r
end

-- The collated batch of samples `indices` at once (what default_collate
-- would build from get(i) for each index), with one index_select per tensor.
function TensorDataset:get_batch(indices)
  local r = {}
  for k, t in ipairs(self.tensors) do
    r[k] = t:index_select(1, torch.tensor(indices, { device = t.device }))
  end
  return r
end

-- -------------------------------------------------------------- collate

local function is_list(t)
  if getmetatable(t) ~= nil then return false end
  local n = #t
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  return count == n
end

-- PyTorch's default_collate: tensors are stacked along a new dim 1,
-- integers make an int64 tensor, floats a float64 tensor, booleans a bool
-- tensor, strings stay a list; lists are collated position by position
-- and tables with keys key by key.
local function default_collate(samples)
  local elem = samples[1]
  if is_tensor(elem) then return torch.stack(samples, 1) end
  local t = type(elem)
  if t == "number" then
    for _, s in ipairs(samples) do
      if math.type(s) ~= "integer" then return torch.tensor(samples, { dtype = torch.float64 }) end
    end
    return torch.tensor(samples)
  end
  if t == "boolean" then return torch.tensor(samples, { dtype = torch.bool }) end
  if t == "table" and getmetatable(elem) == nil then
    if is_list(elem) then
      local n = #elem
      for _, s in ipairs(samples) do
        if type(s) ~= "table" or #s ~= n then
          fail("each element in list of batch should be of equal size")
        end
      end
      local r = {}
      for j = 1, n do
        local col = {}
        for i, s in ipairs(samples) do col[i] = s[j] end
        r[j] = default_collate(col)
      end
      return r
    end
    local r = {}
    for k in pairs(elem) do
      local col = {}
      for i, s in ipairs(samples) do col[i] = s[k] end
      r[k] = default_collate(col)
    end
    return r
  end
  return samples
end
D.default_collate = default_collate

-- ----------------------------------------------------------- DataLoader

local DataLoader = {}
-- A loader is not a list: `ipairs(loader)` (Python's `for X, y in
-- loader`) would run zero times without a word, so it raises at once.
function DataLoader.__index(self, k)
  if type(k) == "number" then
    fail("a DataLoader is not a list (ipairs over it would run zero times): loop over it with "
      .. "`for batch in loader do local X, y = batch[1], batch[2] ... end` or `for i, X, y in loader:enumerate() do`")
  end
  return DataLoader[k]
end
DataLoader.__name = "DataLoader"
D.DataLoader = DataLoader
D.DistributedSampler = require("torch.utils.sampler")

local function new_loader(_, dataset, opts)
  opts = options(opts, "DataLoader")
  check_options(opts, "DataLoader",
    { "batch_size", "shuffle", "drop_last", "collate_fn", "sampler", "pin_memory", "num_workers" })
  if type(dataset) ~= "table" then
    fail("DataLoader: expected a dataset (a table with __len and get(i)), got " .. type(dataset))
  end
  local bs = opts.batch_size == nil and 1 or opts.batch_size
  if math.type(bs) ~= "integer" or bs < 1 then
    fail("batch_size should be a positive integer value, but got batch_size=" .. tostring(bs))
  end
  if opts.collate_fn ~= nil and type(opts.collate_fn) ~= "function" then
    fail("DataLoader: collate_fn must be a function")
  end
  local nw = opts.num_workers
  if nw ~= nil and (math.type(nw) ~= "integer" or nw < 0) then
    fail("num_workers option should be a non-negative integer, got " .. tostring(nw))
  end
  if opts.sampler ~= nil and opts.shuffle then fail("DataLoader: sampler option is mutually exclusive with shuffle") end
  if opts.sampler ~= nil and type(opts.sampler) ~= "table" then
    fail("DataLoader: sampler must be a sampler (e.g. DistributedSampler) or a list of indices, got " .. type(opts.sampler))
  end
  if type(opts.sampler) == "table" and type(opts.sampler.indices) ~= "function" then
    -- a list of indices: checked here, not deep inside index_select, and
    -- a hole ({1, nil, 3}) is an error instead of a list cut short
    local s, count, n = opts.sampler, 0, dataset_len(dataset)
    for _ in pairs(s) do count = count + 1 end
    for i = 1, math.max(count, #s) do
      local v = s[i]
      if v == nil then
        fail(string.format("DataLoader: the sampler list has a hole at entry %d (nil); expected a list of indices", i))
      end
      if math.type(v) ~= "integer" or v < 1 or v > n then
        fail(string.format("DataLoader: sampler entry %d is %s; expected an integer index 1..%d (the dataset's length)",
          i, require("torch.utils.errors").describe(v), n))
      end
    end
  end
  local self = setmetatable({
    dataset = dataset,
    batch_size = bs,
    shuffle = opts.shuffle and true or false,
    drop_last = opts.drop_last and true or false,
    collate_fn = opts.collate_fn,
    sampler = opts.sampler,
    pin_memory = opts.pin_memory and true or false,
    num_workers = nw or 0,
    _open = {}, -- the unfinished epochs of `for batch in loader`, newest first
  }, DataLoader)
  dataset_len(dataset) -- fails early on something without a length
  return self
end
setmetatable(DataLoader, { __call = new_loader })

-- #loader: the number of batches per epoch.
function DataLoader:__len()
  local n = self.sampler and #self.sampler or dataset_len(self.dataset)
  if self.drop_last then return n // self.batch_size end
  -- not (n + bs - 1) // bs: that overflows for a batch_size near 2^63
  return n // self.batch_size + (n % self.batch_size > 0 and 1 or 0)
end

function DataLoader:__tostring()
  return string.format("DataLoader(batches=%d, batch_size=%d, shuffle=%s, drop_last=%s)", #self,
    self.batch_size, tostring(self.shuffle), tostring(self.drop_last))
end

-- The sample order of a new epoch: 1..n, or torch.randperm(n) (so
-- torch.manual_seed makes it reproducible).
function DataLoader:_order()
  local sampler = self.sampler
  if sampler then
    if type(sampler.indices) == "function" then return sampler:indices() end
    return table.move(sampler, 1, #sampler, 1, {})
  end
  local n = dataset_len(self.dataset)
  if self.shuffle then
    if n == 0 then return {} end
    return torch.randperm(n):tolist()
  end
  local r = {}
  for i = 1, n do r[i] = i end
  return r
end

-- pin_memory: CPU tensors of the batch (at its top level or in its list)
-- are replaced by pinned copies.
local function pin(batch)
  if is_tensor(batch) then
    if batch.device.type == "cpu" and not batch:is_pinned() then return batch:pin_memory() end
    return batch
  end
  if type(batch) == "table" and getmetatable(batch) == nil then
    for k, v in pairs(batch) do
      if is_tensor(v) then batch[k] = pin(v) end
    end
  end
  return batch
end

function DataLoader:_fetch(indices)
  local ds = self.dataset
  local batch
  if self.collate_fn == nil and type(ds.get_batch) == "function" then batch = ds:get_batch(indices)
  else
    local samples = {}
    for k, i in ipairs(indices) do samples[k] = dataset_get(ds, i) end
    batch = (self.collate_fn or default_collate)(samples)
  end
  if self.pin_memory then batch = pin(batch) end
  return batch
end

local function next_batch(self, epoch)
  local order, bs = epoch.order, self.batch_size
  local start = epoch.pos
  local n = #order
  if start > n then return nil end
  local stop = math.min(start + bs - 1, n)
  if self.drop_last and stop - start + 1 < bs then return nil end
  epoch.pos = stop + 1
  local idx = table.move(order, start, stop, 1, {})
  return self:_fetch(idx)
end

-- `for X, y in loader do` binds X to the whole batch and y to the second
-- value the loop gets: that value (ignored by `for batch in loader do`)
-- and the batch list's fields name the fix when used.
local LOOP_FIX = "write `for i, X, y in loader:enumerate() do` (i from 1), or `for batch in loader do "
  .. "local X, y = batch[1], batch[2] ... end`"
local function misuse() fail("`for X, y in loader do` gives X the whole batch {X, y} and y nothing: " .. LOOP_FIX) end
local NOT_Y = setmetatable({}, {
  __index = misuse, __newindex = misuse, __call = misuse, __tostring = misuse, __concat = misuse, __len = misuse,
  __add = misuse, __sub = misuse, __mul = misuse, __div = misuse, __unm = misuse, __eq = misuse, __lt = misuse,
  __le = misuse, __name = "not a label: see the loop",
})
local BATCH_LIST = {
  __index = function(_, k)
    if type(k) == "string" then
      fail(string.format("a batch is a list {X, y}, not a tensor: it has no field '%s'; %s", k, LOOP_FIX))
    end
  end,
}

-- for batch in loader do ... end: each loop is a new epoch (reshuffled
-- when shuffle is set). loader:iter() gives the same as an iterator function.
--
-- The generic for hands back only the previous batch, so the epoch a call
-- continues is the most recent unfinished one that returned that batch:
-- nested loops over one loader each keep theirs even when collate_fn
-- returns one shared object (keyed by the batch alone, the inner loop
-- took over the outer one's epoch). An epoch leaves the list when it
-- ends; one left by `break` stays among the last MAX_OPEN.
local MAX_OPEN = 64
local WEAK_VALUES = { __mode = "v" }
function DataLoader:__call(_, prev)
  local open, epoch = self._open
  if prev == nil then
    epoch = { order = self:_order(), pos = 1, last = setmetatable({}, WEAK_VALUES) }
    table.insert(open, 1, epoch)
    if #open > MAX_OPEN then open[#open] = nil end
  else
    for _, e in ipairs(open) do
      if rawequal(e.last[1], prev) then epoch = e break end
    end
    if epoch == nil then return nil end
  end
  local batch = next_batch(self, epoch)
  if batch ~= nil then epoch.last[1] = batch
  else
    for i, e in ipairs(open) do
      if e == epoch then table.remove(open, i) break end
    end
  end
  if type(batch) == "table" and getmetatable(batch) == nil and is_list(batch) then
    return setmetatable(batch, BATCH_LIST), NOT_Y
  end
  return batch
end

function DataLoader:iter()
  local epoch = { order = self:_order(), pos = 1 }
  return function() return next_batch(self, epoch) end
end

-- for i, X, y in loader:enumerate() do ... end: Python's
-- `for i, (X, y) in enumerate(loader)`, i from 1; a batch that is a list
-- is unpacked after i (a tensor batch comes as it is). A new epoch.
function DataLoader:enumerate()
  local epoch = { order = self:_order(), pos = 1 }
  local i = 0
  return function()
    local batch = next_batch(self, epoch)
    if batch == nil then return nil end
    i = i + 1
    if type(batch) == "table" and getmetatable(batch) == nil then return i, table.unpack(batch) end
    return i, batch
  end
end

return D
