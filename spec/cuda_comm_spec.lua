-- cuda_comm_spec.lua: torch.cuda.comm on 3 CUDA devices (simulated when
-- the machine has none): broadcast, reduce_add, scatter (chunk semantics
-- and chunk_sizes), gather, every dtype, the transfers they count, and
-- the errors for bad input.
local torch = require("torch")
local H = require("helpers")
local comm = torch.cuda.comm

local DTYPES = { "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8" }

describe("torch.cuda.comm", function()
  teardown(function() H.release_gpus() end)

  it("broadcast copies a tensor to every device, keeping the source's own tensor", function()
    if not H.gpus(3) then return pending("needs 3 CUDA devices") end
    local x = torch.tensor({ { 1, 2 }, { 3, 4 } }, { device = "cuda:1", dtype = torch.float64 })
    torch.cuda.reset_transfers()
    local outs = comm.broadcast(x, { 0, 1, "cuda:2" })
    assert.are.equal(3, #outs)
    for i, o in ipairs(outs) do
      assert.are.equal(torch.device("cuda", i - 1), o.device)
      H.check(o, "float64", { 2, 2 }, { { 1.0, 2.0 }, { 3.0, 4.0 } })
    end
    assert.is_true(rawequal(outs[2], x))
    local tr = torch.cuda.transfers()
    assert.are.same({ 2, 64 }, { tr.d2d.count, tr.d2d.bytes })
  end)

  it("broadcast and reduce_add keep every dtype's values", function()
    if not H.gpus(3) then return pending("needs 3 CUDA devices") end
    for _, name in ipairs(DTYPES) do
      local x = torch.tensor({ 1, 2, 3 }, { dtype = torch[name], device = "cuda:0" })
      local outs = comm.broadcast(x, { 0, 1, 2 })
      local s = comm.reduce_add(outs, 2)
      assert.are.equal(torch[name], s.dtype, name)
      assert.are.equal(torch.device("cuda:2"), s.device, name)
      local float = name:find("float") ~= nil
      H.assert_list_equal(s:tolist(), float and { 3.0, 6.0, 9.0 } or { 3, 6, 9 }, name)
    end
    local b = comm.reduce_add({ torch.tensor({ true, false }, { device = "cuda:0" }),
                                torch.tensor({ false, false }, { device = "cuda:1" }) }, 0)
    assert.are.same({ true, false }, b:tolist())
  end)

  it("reduce_add sums tensors from distinct devices onto the destination", function()
    if not H.gpus(3) then return pending("needs 3 CUDA devices") end
    local a = torch.tensor({ 1.5, -2 }, { device = "cuda:0" })
    local b = torch.tensor({ 10.0, 20.0 }, { device = "cuda:1" })
    local c = torch.tensor({ 100.0, 200.0 }, { device = "cuda:2" })
    torch.cuda.set_device(1)
    torch.cuda.reset_transfers()
    local s = comm.reduce_add({ a, b, c })
    torch.cuda.set_device(0)
    assert.are.equal(torch.device("cuda:1"), s.device) -- the current device by default
    H.assert_list_equal(s:tolist(), { 111.5, 218.0 })
    assert.are.equal(2, torch.cuda.transfers().d2d.count) -- a and c moved, b already there
    H.assert_list_equal(a:tolist(), { 1.5, -2.0 }) -- inputs untouched
  end)

  it("scatter splits with chunk semantics: 10 rows on 3 devices are 4, 4, 2", function()
    if not H.gpus(3) then return pending("needs 3 CUDA devices") end
    local x = torch.arange(20):reshape(10, 2)
    torch.cuda.reset_transfers()
    local parts = comm.scatter(x, { 0, 1, 2 })
    assert.are.equal(3, #parts)
    local rows = {}
    for i, p in ipairs(parts) do
      rows[i] = p:size(1)
      assert.are.equal(torch.device("cuda", i - 1), p.device)
    end
    assert.are.same({ 4, 4, 2 }, rows)
    H.assert_list_equal(parts[3]:tolist(), { { 16, 17 }, { 18, 19 } })
    assert.are.equal(3, torch.cuda.transfers().h2d.count)
    -- 2 rows on 3 devices: 2 chunks (torch.chunk), as PyTorch
    assert.are.equal(2, #comm.scatter(torch.ones(2, 3), { 0, 1, 2 }))
  end)

  it("scatter takes a dim and explicit chunk_sizes; gather is its inverse", function()
    if not H.gpus(3) then return pending("needs 3 CUDA devices") end
    local x = torch.arange(12):reshape(2, 6):double()
    local parts = comm.scatter(x, { 2, 0, 1 }, { dim = 2, chunk_sizes = { 1, 2, 3 } })
    assert.are.same({ { 2, 1 }, { 2, 2 }, { 2, 3 } }, { H.shape(parts[1]), H.shape(parts[2]), H.shape(parts[3]) })
    assert.are.equal(torch.device("cuda:2"), parts[1].device)
    local back = comm.gather(parts, { dim = 2, destination = "cpu" })
    assert.are.equal(torch.device("cpu"), back.device)
    H.assert_list_equal(back:tolist(), x:tolist())
    local on1 = comm.gather(comm.scatter(x, { 0, 1 }), { destination = 1 })
    assert.are.equal(torch.device("cuda:1"), on1.device)
    H.assert_list_equal(on1:tolist(), x:tolist())
    assert.are.equal(torch.device("cpu"), comm.gather(parts, { dim = -1, destination = -1 }).device)
  end)

  it("rejects bad input with messages that say what was expected", function()
    if not H.gpus(3) then return pending("needs 3 CUDA devices") end
    local x = torch.ones(4, { device = "cuda:0" })
    H.errors(function() comm.broadcast(x, { 0, 0 }) end, "distinct")
    H.errors(function() comm.broadcast(x, { 0, 7 }) end, "cuda:7 is not available")
    H.errors(function() comm.broadcast(x, { "cpu" }) end, "CUDA devices")
    H.errors(function() comm.broadcast(x, {}) end, "non-empty list of devices")
    H.errors(function() comm.reduce_add({ x, torch.ones(5, { device = "cuda:1" }) }) end, "same shape")
    H.errors(function() comm.reduce_add({ x, torch.ones(4, { device = "cuda:1", dtype = torch.int64 }) }) end, "same dtype")
    H.errors(function() comm.reduce_add({ x, torch.ones(4, { device = "cuda:0" }) }) end, "distinct devices")
    H.errors(function() comm.reduce_add({ x, torch.ones(4) }) end, "on the cpu")
    H.errors(function() comm.scatter(x, { 0, 1 }, { chunk_sizes = { 1, 2 } }) end, "add up to 3")
    H.errors(function() comm.scatter(x, { 0, 1 }, { chunk_sizes = { 4 } }) end,
      "scatter: chunk_sizes has 1 entries for 2 devices (one per device expected)")
    H.errors(function() comm.scatter(x, { 0, 1 }, { dim = 2 }) end, "out of range")
    H.errors(function() comm.scatter(x, { 0, 1 }, { dims = 1 }) end, { "unknown option 'dims'", "'dim'" })
    H.errors(function() comm.gather({ x, torch.ones(4, { dtype = torch.int64, device = "cuda:1" }) }) end, "same dtype")
    H.errors(function() comm.gather({ x, torch.ones(4, 2, { device = "cuda:1" }) }) end, "same number of dimensions")
  end)
end)
