-- device_memory_spec.lua: the allocator figures of simulated GPUs mean
-- what PyTorch's mean (docs/devices.md, "Memory figures"), and running
-- out of memory under a cap is a clean, recoverable error.
local torch = require("torch")
local cuda = torch.cuda

local MiB = 1 << 20
local saved_n, saved_cap

local function gc() collectgarbage(); collectgarbage() end
local function sim(n, cap) gc(); torch._sim_configure(n, cap) end

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return (tostring(e):gsub("^[^\n]-:%d+: ", ""))
end

-- float32 tensor of exactly `bytes` bytes on dev
local function block(bytes, dev) return torch.empty(bytes // 4, { device = dev }) end

describe("device memory", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() sim(saved_n, saved_cap) end)
  before_each(function() sim(2, 64 * MiB) end)

  it("starts empty", function()
    for i = 0, 1 do
      assert.are.equal(0, cuda.memory_allocated(i))
      assert.are.equal(0, cuda.max_memory_allocated(i))
      assert.are.equal(0, cuda.memory_reserved(i))
      assert.are.same({ 64 * MiB, 64 * MiB }, { cuda.mem_get_info(i) })
    end
  end)

  it("counts live tensor bytes rounded up to 512, per device", function()
    local a = torch.ones(3, { device = "cuda:0" })          -- 12 bytes -> 512
    assert.are.equal(512, cuda.memory_allocated(0))
    local b = torch.ones(129, { device = "cuda:0" })        -- 516 bytes -> 1024
    assert.are.equal(512 + 1024, cuda.memory_allocated(0))
    local c = torch.ones(128, { device = "cuda:0" })        -- exactly 512
    assert.are.equal(2048, cuda.memory_allocated(0))
    local e = torch.ones(0, { device = "cuda:0" })          -- nothing
    assert.are.equal(2048, cuda.memory_allocated(0))
    assert.are.equal(0, cuda.memory_allocated(1))           -- other devices are separate
    local d = torch.ones(1000, { device = "cuda:1", dtype = torch.float64 }) -- 8000 -> 8192
    assert.are.equal(8192, cuda.memory_allocated(1))
    assert.are.equal(2048, cuda.memory_allocated("cuda:0"))
    assert.are.equal(8192, cuda.memory_allocated(torch.device("cuda", 1)))
    -- views share storage: no new memory
    local v = d:view(10, 100):t()
    assert.are.equal(8192, cuda.memory_allocated(1))
    -- the CPU is not a CUDA device
    assert.matches("expected a CUDA device, got cpu", err(cuda.memory_allocated, "cpu"), nil, true)
    assert.matches("cuda:2 is not available", err(cuda.memory_allocated, 2), nil, true)
  end)

  it("defaults to the current device", function()
    local x = block(MiB, "cuda:1")
    assert.are.equal(0, cuda.memory_allocated())
    cuda.set_device(1)
    assert.are.equal(MiB, cuda.memory_allocated())
    assert.are.equal(MiB, cuda.memory_reserved())
    cuda.set_device(0)
  end)

  it("keeps freed blocks reserved (cached) until empty_cache, and reuses them", function()
    local x = block(MiB, "cuda:0")
    assert.are.equal(MiB, cuda.memory_reserved(0))
    x = nil
    gc()
    assert.are.equal(0, cuda.memory_allocated(0))
    assert.are.equal(MiB, cuda.memory_reserved(0))            -- cached
    assert.are.same({ 63 * MiB, 64 * MiB }, { cuda.mem_get_info(0) })
    local hits = cuda.memory_stats(0)["num_cache_hits"]
    local y = block(MiB, "cuda:0")                            -- same rounded size: reused
    assert.are.equal(MiB, cuda.memory_allocated(0))
    assert.are.equal(MiB, cuda.memory_reserved(0))
    assert.are.equal(hits + 1, cuda.memory_stats(0)["num_cache_hits"])
    local z = block(2 * MiB, "cuda:0")                        -- another size: fresh
    assert.are.equal(3 * MiB, cuda.memory_reserved(0))
    y, z = nil, nil
    gc()
    assert.are.equal(0, cuda.memory_allocated(0))
    assert.are.equal(3 * MiB, cuda.memory_reserved(0))
    cuda.empty_cache()
    assert.are.equal(0, cuda.memory_reserved(0))
    assert.are.same({ 64 * MiB, 64 * MiB }, { cuda.mem_get_info(0) })
  end)

  it("serves a smaller tensor from a larger cached block (best fit, split) and merges the pieces back", function()
    local a = block(8 * MiB, "cuda:0")
    a = nil
    gc()
    local hits = cuda.memory_stats(0)["num_cache_hits"]
    local b = block(2 * MiB, "cuda:0")      -- carved out of the cached 8 MiB block
    local c = block(6 * MiB, "cuda:0")      -- its rest
    assert.are.equal(8 * MiB, cuda.memory_allocated(0))
    assert.are.equal(8 * MiB, cuda.memory_reserved(0))
    assert.are.equal(hits + 2, cuda.memory_stats(0)["num_cache_hits"])
    b = nil
    gc()
    cuda.empty_cache()                      -- the block holding c keeps its segment
    assert.are.equal(8 * MiB, cuda.memory_reserved(0))
    c = nil
    gc()
    local d = block(8 * MiB, "cuda:0")      -- the pieces merged: one 8 MiB block again
    assert.are.equal(8 * MiB, cuda.memory_reserved(0))
    assert.are.equal(hits + 3, cuda.memory_stats(0)["num_cache_hits"])
    d = nil
    gc()
    cuda.empty_cache()
    assert.are.equal(0, cuda.memory_reserved(0))
  end)

  it("picks the smallest cached block that fits, and keeps a leftover of 1 MiB or less in it", function()
    local a, b = block(8 * MiB, "cuda:0"), block(4 * MiB, "cuda:0")
    a, b = nil, nil
    gc()
    local c = block(3 * MiB + MiB // 2, "cuda:0") -- the 4 MiB block, whole (0.5 MiB is not split off)
    assert.are.equal(4 * MiB, cuda.memory_allocated(0))
    local d = block(8 * MiB, "cuda:0")            -- the 8 MiB block is still there for this one
    assert.are.equal(12 * MiB, cuda.memory_allocated(0))
    assert.are.equal(12 * MiB, cuda.memory_reserved(0))
  end)

  it("a <close> tensor gives its block back when its block of code ends", function()
    do
      local x <close> = block(MiB, "cuda:0")
      assert.are.equal(MiB, cuda.memory_allocated(0))
    end
    assert.are.equal(0, cuda.memory_allocated(0))
    assert.are.equal(MiB, cuda.memory_reserved(0))
    for _ = 1, 10 do
      local a <close> = block(MiB, "cuda:0")
      local b <close> = a * 2
    end
    assert.are.equal(0, cuda.memory_allocated(0))
    -- two 1 MiB blocks reused by every iteration, and the 512-byte block of
    -- the 0-d tensor that carries the scalar 2 into the multiplication
    assert.are.equal(2 * MiB + 512, cuda.memory_reserved(0))
  end)

  it("empty_cache keeps live tensors and releases every device's cache", function()
    local keep = block(MiB, "cuda:0")
    local a, b = block(MiB, "cuda:0"), block(2 * MiB, "cuda:1")
    a, b = nil, nil
    gc()
    assert.are.equal(2 * MiB, cuda.memory_reserved(0))
    assert.are.equal(2 * MiB, cuda.memory_reserved(1))
    cuda.empty_cache()
    assert.are.equal(MiB, cuda.memory_reserved(0))
    assert.are.equal(0, cuda.memory_reserved(1))
    assert.are.equal(MiB, cuda.memory_allocated(0))
    assert.are.equal(1.0, keep:fill_(1):sum():item() / (MiB // 4))
  end)

  it("tracks the peak until reset_peak_memory_stats", function()
    local a = block(4 * MiB, "cuda:0")
    local b = block(8 * MiB, "cuda:0")
    b = nil
    gc()
    assert.are.equal(4 * MiB, cuda.memory_allocated(0))
    assert.are.equal(12 * MiB, cuda.max_memory_allocated(0))
    assert.are.equal(12 * MiB, cuda.max_memory_reserved(0))
    assert.are.equal(0, cuda.max_memory_allocated(1))
    cuda.reset_peak_memory_stats(0)
    assert.are.equal(4 * MiB, cuda.max_memory_allocated(0))
    local c = block(MiB, "cuda:0")
    assert.are.equal(5 * MiB, cuda.max_memory_allocated(0))
    -- an op's temporaries show in the peak
    cuda.reset_peak_memory_stats(0)
    local before = cuda.memory_allocated(0)
    local s = (a * 2):sum()
    gc()
    assert.is_true(cuda.max_memory_allocated(0) >= before + 4 * MiB)
  end)

  it("max_memory_reserved keeps the peak of reserved through free and empty_cache", function()
    local a = block(2 * MiB, "cuda:0")
    local b = block(6 * MiB, "cuda:0")
    b = nil
    gc()
    assert.are.equal(8 * MiB, cuda.memory_reserved(0))       -- b's block is cached
    cuda.empty_cache()
    assert.are.equal(2 * MiB, cuda.memory_reserved(0))
    assert.are.equal(8 * MiB, cuda.max_memory_reserved(0))   -- the peak, not the current figure
    assert.are.equal(8 * MiB, cuda.memory_stats(0)["reserved_bytes.all.peak"])
    assert.are.equal(0, cuda.max_memory_reserved(1))
    cuda.reset_peak_memory_stats(0)
    assert.are.equal(2 * MiB, cuda.max_memory_reserved(0))
    local c = block(MiB, "cuda:0")
    assert.are.equal(3 * MiB, cuda.max_memory_reserved(0))
    a, c = nil, nil
  end)

  it("memory_reserved = allocated + cached, and mem_get_info = (cap - reserved, cap)", function()
    local a = block(3 * MiB, "cuda:1")
    local b = block(5 * MiB, "cuda:1")
    b = nil
    gc()
    local st = cuda.memory_stats(1)
    assert.are.equal(3 * MiB, st["allocated_bytes.all.current"])
    assert.are.equal(8 * MiB, st["reserved_bytes.all.current"])
    assert.are.equal(5 * MiB, st["inactive_split_bytes.all.current"])
    assert.are.equal(cuda.memory_allocated(1) + st["inactive_split_bytes.all.current"], cuda.memory_reserved(1))
    local free, total = cuda.mem_get_info(1)
    assert.are.equal(64 * MiB, total)
    assert.are.equal(total - cuda.memory_reserved(1), free)
    assert.are.equal(1, st["allocation.all.current"])
  end)

  describe("out of memory", function()
    it("reports what was asked, where, and what is free of the cap", function()
      local a = block(48 * MiB, "cuda:0")
      assert.are.equal("CUDA out of memory. Tried to allocate 32.00 MiB on cuda:0 (16.00 MiB free of 64.00 MiB)",
        err(torch.empty, 8 * MiB, { device = "cuda:0" }))
      assert.are.equal("CUDA out of memory. Tried to allocate 2.00 GiB on cuda:1 (64.00 MiB free of 64.00 MiB)",
        err(torch.zeros, 1 << 29, { device = "cuda:1" }))
      -- the message names the tensor's size (40 MiB + 4 bytes; the block would be 40 MiB + 512)
      assert.matches("Tried to allocate 40.00 MiB on cuda:0", err(torch.empty, 10 * MiB + 1, { device = "cuda:0" }),
        nil, true)
      assert.is_true(cuda.memory_stats(0)["num_ooms"] >= 1)
    end)

    it("releases the cache before failing (free counts cached blocks as free)", function()
      local a = block(30 * MiB, "cuda:0")
      a = nil
      gc()
      assert.are.equal(30 * MiB, cuda.memory_reserved(0))
      local b = block(40 * MiB, "cuda:0") -- fits only once the 30 MiB cached block is released
      assert.are.equal(40 * MiB, cuda.memory_reserved(0))
      assert.are.equal(40 * MiB, cuda.memory_allocated(0))
      local c = block(10 * MiB, "cuda:0")
      local cached = block(10 * MiB, "cuda:0")
      cached = nil
      gc()                                 -- 60 MiB reserved: 50 live + 10 cached
      assert.are.equal("CUDA out of memory. Tried to allocate 20.00 MiB on cuda:0 (14.00 MiB free of 64.00 MiB)",
        err(block, 20 * MiB, "cuda:0"))    -- free = cap - reserved after emptying the cache
      assert.are.equal(50 * MiB, cuda.memory_reserved(0))
    end)

    it("collects garbage tensors and retries before failing", function()
      collectgarbage("stop")
      local ok, e = pcall(function()
        -- 48 MiB of garbage, not collected yet. (The binding's GC-pressure
        -- step may collect once on the way; it then waits for another
        -- 64 MiB, so keep making garbage until 48 MiB of it is live.)
        for _ = 1, 20 do
          if cuda.memory_allocated(0) >= 48 * MiB then break end
          block(8 * MiB, "cuda:0")
        end
        assert.are.equal(48 * MiB, cuda.memory_allocated(0))
        local big = block(40 * MiB, "cuda:0")         -- needs the garbage gone
        assert.are.equal(40 * MiB, cuda.memory_allocated(0))
        assert.are.equal(40 * MiB, cuda.memory_reserved(0))
      end)
      collectgarbage("restart")
      assert(ok, e)
    end)

    it("leaves the session and other tensors intact", function()
      local keep = torch.arange(1000, { device = "cuda:0" }):float()
      local other = torch.ones(10, { device = "cuda:1" })
      gc()
      local before = cuda.memory_allocated(0)
      for _ = 1, 5 do
        assert.matches("^CUDA out of memory", err(torch.ones, 100 * MiB, { device = "cuda:0" }))
        assert.matches("^CUDA out of memory", err(function() return keep:expand(100000, 1000):contiguous() end))
        assert.matches("^CUDA out of memory", err(function() return torch.ones(20 * MiB):cuda(0) end))
      end
      gc()
      assert.are.equal(before, cuda.memory_allocated(0)) -- nothing leaked by the failures
      assert.are.equal(499500.0, keep:sum():item())
      assert.are.equal(10.0, other:sum():item())
      local fine = block(32 * MiB, "cuda:0")
      fine:fill_(2)
      assert.are.equal(2.0, fine:mean():item())
      -- the other device is not affected by cuda:0's cap use (counted from
      -- what cuda:1 holds now: `other`, and whatever earlier specs left)
      gc()
      local on1 = cuda.memory_allocated(1)
      assert.is_true(on1 >= 512, tostring(on1))
      local y = block(60 * MiB, "cuda:1")
      assert.are.equal(on1 + 60 * MiB, cuda.memory_allocated(1))
    end)

    it("applies to every way of making memory: ops, copies, moves", function()
      local a = block(40 * MiB, "cuda:0")
      assert.matches("^CUDA out of memory", err(function() return a + 1 end))
      assert.matches("^CUDA out of memory", err(function() return a:clone() end))
      assert.matches("^CUDA out of memory", err(function() return a:double() end))
      assert.matches("^CUDA out of memory", err(function() return torch.cat({ a, a }) end))
      local b = block(40 * MiB, "cuda:1")
      assert.matches("^CUDA out of memory. Tried to allocate 40.00 MiB on cuda:1",
        err(function() return a:to("cuda:1") end))
      assert.matches("^CUDA out of memory", err(function() return a:view(-1, 1024):matmul(torch.ones(1024, 1024, { device = 0 })) end))
    end)
  end)

  it("refuses to reconfigure simulated GPUs while tensors live on them", function()
    local x = torch.ones(1, { device = "cuda:1" })
    assert.matches("cannot change simulated GPUs while tensors live on cuda:1", err(torch._sim_configure, 3), nil, true)
    assert.are.equal(2, cuda.device_count())
    x = nil
  end)

  it("on real devices the figures come from the CUDA backend with the same meaning", function()
    sim(0)
    if cuda.device_count() == 0 then return pending("no real CUDA device on this machine") end
    local before = cuda.memory_allocated(0)
    local x = torch.ones(3, { device = "cuda:0" })
    assert.is_true(cuda.memory_allocated(0) > before)
    x = nil
    gc()
    assert.are.equal(before, cuda.memory_allocated(0))
    assert.is_true(cuda.memory_reserved(0) >= cuda.memory_allocated(0))
    local free, total = cuda.mem_get_info(0)
    assert.is_true(free <= total and total > 0)
    -- the peak of reserved survives empty_cache (it used to be the current figure)
    cuda.empty_cache()
    cuda.reset_peak_memory_stats(0)
    local base = cuda.memory_reserved(0)
    local y = torch.empty(4 << 20, { device = "cuda:0" }) -- 16 MiB
    y = nil
    gc()
    cuda.empty_cache()
    assert.are.equal(base, cuda.memory_reserved(0))
    assert.is_true(cuda.max_memory_reserved(0) >= base + (16 << 20))
    assert.are.equal(cuda.max_memory_reserved(0), cuda.memory_stats(0)["reserved_bytes.all.peak"])
  end)
end)
