-- data_spec.lua: torch.utils.data — TensorDataset, user datasets, and the
-- DataLoader's batching, drop_last, shuffling (reproducible under
-- torch.manual_seed) and collation.
local torch = require("torch")
local H = require("helpers")
local data = torch.utils.data

-- X row i is {i, 10 i}, y[i] = i (so a batch shows which samples it holds)
local function dataset(n)
  local X = torch.stack({ torch.arange(1, n + 1), torch.arange(1, n + 1) * 10 }, 2):float()
  local y = torch.arange(1, n + 1)
  return data.TensorDataset(X, y), X, y
end

local function ids(batch) return batch[2]:tolist() end

describe("TensorDataset", function()
  it("has a length and returns the i-th row of each tensor", function()
    local ds = dataset(5)
    assert.are.equal(5, #ds)
    local s = ds:get(2)
    assert.are.equal(2, #s)
    H.check(s[1], "float32", { 2 }, { 2.0, 20.0 })
    H.check(s[2], "int64", {}, 2)
    H.errors(function() ds:get(6) end, "index 6 out of range 1..5")
  end)

  it("checks its tensors", function()
    H.errors(function() data.TensorDataset(torch.ones(3, 2), torch.ones(4)) end, "Size mismatch between tensors")
    H.errors(function() data.TensorDataset(torch.ones(3), 5) end, "argument 2 is not a tensor")
  end)
end)

describe("DataLoader", function()
  it("batches in order, the last batch smaller, #loader counting batches", function()
    local ds = dataset(10)
    local loader = data.DataLoader(ds, { batch_size = 4 })
    assert.are.equal(3, #loader)
    local got = {}
    for batch in loader do
      assert.are.equal(2, #batch)
      assert.are.equal(#ids(batch), batch[1]:size(1))
      assert.are.equal(2, batch[1]:size(2))
      got[#got + 1] = ids(batch)
    end
    assert.are.same({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10 } }, got)
  end)

  it("a batch is what PyTorch's default collate builds: stacked rows", function()
    local ds, X, y = dataset(6)
    local loader = data.DataLoader(ds, { batch_size = 3 })
    for batch in loader do
      H.check(batch[1], "float32", { 3, 2 }, { { 1.0, 10.0 }, { 2.0, 20.0 }, { 3.0, 30.0 } })
      H.check(batch[2], "int64", { 3 }, { 1, 2, 3 })
      -- a copy, not a view of the dataset
      batch[1]:zero_()
      break
    end
    H.check(X[1], "float32", { 2 }, { 1.0, 10.0 })
    assert.is_true(y:equal(torch.arange(1, 7)))
  end)

  it("drop_last drops the incomplete batch", function()
    local loader = data.DataLoader(dataset(10), { batch_size = 4, drop_last = true })
    assert.are.equal(2, #loader)
    local n = 0
    for batch in loader do n = n + 1; assert.are.equal(4, batch[1]:size(1)) end
    assert.are.equal(2, n)
    assert.are.equal(0, #data.DataLoader(dataset(3), { batch_size = 4, drop_last = true }))
  end)

  it("batch_size defaults to 1", function()
    local loader = data.DataLoader((dataset(3))) -- the dataset alone: no options
    assert.are.equal(3, #loader)
    for batch in loader do assert.are.same({ 1 }, H.shape(batch[2])) end
  end)

  it("shuffle visits every sample once per epoch, reproducibly under manual_seed", function()
    local loader = data.DataLoader(dataset(10), { batch_size = 3, shuffle = true })
    local function epoch()
      local all = {}
      for batch in loader do
        for _, i in ipairs(ids(batch)) do all[#all + 1] = i end
      end
      return all
    end
    torch.manual_seed(123)
    local e1 = epoch()
    local e2 = epoch()
    torch.manual_seed(123)
    local e1again = epoch()
    assert.are.same(e1, e1again)
    local sorted = { table.unpack(e1) }
    table.sort(sorted)
    assert.are.same(H.range(10), sorted)
    assert.are_not.same(e1, e2) -- a new order each epoch
    local natural = H.range(10)
    assert.are_not.same(natural, e1)
  end)

  it("the shuffled order is torch.randperm's", function()
    torch.manual_seed(9)
    local perm = torch.randperm(7):tolist()
    torch.manual_seed(9)
    local got = {}
    for batch in data.DataLoader(dataset(7), { batch_size = 7, shuffle = true }) do got = ids(batch) end
    assert.are.same(perm, got)
  end)

  it("each for loop is a new epoch; loader:iter() also iterates", function()
    local loader = data.DataLoader(dataset(4), { batch_size = 2 })
    for _ = 1, 2 do
      local n = 0
      for _ in loader do n = n + 1 end
      assert.are.equal(2, n)
    end
    -- an interrupted loop does not disturb the next one
    for _ in loader do break end
    local first
    for batch in loader do first = first or ids(batch) end
    assert.are.same({ 1, 2 }, first)
    local it, n = loader:iter(), 0
    while it() do n = n + 1 end
    assert.are.equal(2, n)
  end)

  it("nested loops over one loader are independent", function()
    local loader = data.DataLoader(dataset(4), { batch_size = 2 })
    local pairs_seen = 0
    for a in loader do
      for b in loader do
        pairs_seen = pairs_seen + 1
        assert.is_true(a ~= b)
      end
    end
    assert.are.equal(4, pairs_seen)
  end)

  it("rejects bad options", function()
    H.errors(function() data.DataLoader(dataset(3), { batch_size = 0 }) end,
      "batch_size should be a positive integer value, but got batch_size=0")
    H.errors(function() data.DataLoader(42) end, "expected a dataset")
  end)

  -- issue 33
  it("has one batch for a batch_size of 2^63 - 1 (PyTorch: 1; the sum overflowed to -1)", function()
    assert.are.equal(1, #data.DataLoader(dataset(3), { batch_size = math.maxinteger }))
    assert.are.equal(0, #data.DataLoader(dataset(3), { batch_size = math.maxinteger, drop_last = true }))
    local n = 0
    for b in data.DataLoader(dataset(3), { batch_size = math.maxinteger }) do n = n + 1; assert.are.same({ 1, 2, 3 }, ids(b)) end
    assert.are.equal(1, n)
  end)

  it("keeps nested loops apart when collate_fn returns one shared object (9 pairs, not 3)", function()
    local shared = {}
    local loader = data.DataLoader(dataset(3), { collate_fn = function() return shared end })
    local pairs_seen = 0
    for _ in loader do
      for _ in loader do pairs_seen = pairs_seen + 1 end
    end
    assert.are.equal(9, pairs_seen)
    -- a loop left by break does not confuse the next one
    for _ in loader do break end
    local n = 0
    for _ in loader do n = n + 1 end
    assert.are.equal(3, n)
  end)

  it("checks a sampler list: integers in range, no holes", function()
    H.errors(function() data.DataLoader(dataset(3), { sampler = { 1.5 } }) end,
      "DataLoader: sampler entry 1 is the number 1.5; expected an integer index 1..3")
    H.errors(function() data.DataLoader(dataset(3), { sampler = { 1, 4 } }) end,
      "DataLoader: sampler entry 2 is the number 4; expected an integer index 1..3")
    H.errors(function() data.DataLoader(dataset(3), { sampler = { 1, nil, 3 } }) end,
      "DataLoader: the sampler list has a hole at entry 2 (nil)")
    local got = {}
    for b in data.DataLoader(dataset(3), { sampler = { 3, 1 } }) do got[#got + 1] = ids(b)[1] end
    assert.are.same({ 3, 1 }, got)
  end)
end)

describe("user datasets", function()
  it("a Dataset class with __len and get(i), returning one tensor per sample (the book's RandomDataset)", function()
    local RandomDataset = data.Dataset:extend("RandomDataset")
    function RandomDataset:init(size, length)
      self.len = length
      self.data = torch.randn(length, size)
    end
    function RandomDataset:get(i) return self.data[i] end
    function RandomDataset:__len() return self.len end
    local ds = RandomDataset(5, 100)
    assert.are.equal(100, #ds)
    local loader = data.DataLoader(ds, { batch_size = 30, shuffle = true })
    assert.are.equal(4, #loader)
    local sizes = {}
    for batch in loader do
      assert.is_true(torch.is_tensor(batch))
      sizes[#sizes + 1] = batch:size(1)
      assert.are.equal(5, batch:size(2))
    end
    assert.are.same({ 30, 30, 30, 10 }, sizes)
  end)

  it("any table with a __len metamethod and get(i)", function()
    local ds = setmetatable({ n = 5 }, {
      __len = function(self) return self.n end,
      __index = { get = function(_, i) return { x = torch.tensor({ i * 1.0, -i * 1.0 }), label = i, name = "s" .. i } end },
    })
    local got = {}
    for batch in data.DataLoader(ds, { batch_size = 2 }) do got[#got + 1] = batch end
    assert.are.equal(3, #got)
    H.check(got[1].x, "float32", { 2, 2 }, { { 1.0, -1.0 }, { 2.0, -2.0 } })
    H.check(got[1].label, "int64", { 2 }, { 1, 2 })
    assert.are.same({ "s1", "s2" }, got[1].name)
    H.check(got[3].label, "int64", { 1 }, { 5 })
  end)

  it("a table with a __len field, numbers collated like PyTorch (floats to float64)", function()
    local ds = { __len = function() return 4 end, get = function(_, i) return { i / 2, i } end }
    local batches = {}
    for batch in data.DataLoader(ds, { batch_size = 4 }) do batches[#batches + 1] = batch end
    H.check(batches[1][1], "float64", { 4 }, { 0.5, 1.0, 1.5, 2.0 })
    H.check(batches[1][2], "int64", { 4 }, { 1, 2, 3, 4 })
  end)

  it("a plain list of samples, and a custom collate_fn", function()
    local list = { torch.ones(2), torch.zeros(2), torch.ones(2) * 2 }
    local loader = data.DataLoader(list, {
      batch_size = 2,
      collate_fn = function(samples) return #samples end,
    })
    local got = {}
    for n in loader do got[#got + 1] = n end
    assert.are.same({ 2, 1 }, got)
    for batch in data.DataLoader(list, { batch_size = 3 }) do
      H.check(batch, "float32", { 3, 2 }, { { 1.0, 1.0 }, { 0.0, 0.0 }, { 2.0, 2.0 } })
    end
  end)

  it("a Dataset class without get is a clear error", function()
    local Bad = data.Dataset:extend("Bad")
    function Bad:__len() return 2 end
    H.errors(function() for _ in data.DataLoader(Bad()) do end end, "Bad must define get(i)")
  end)
end)
