-- device_transfer_spec.lua: moving tensors between memories -- every form
-- of x:to(...), x:cuda([i]), x:cpu(), moves that change nothing returning
-- the very same object, and torch.cuda.transfers() counting every copy
-- between memories exactly once (docs/devices.md, "Transfers").
local torch = require("torch")
local cuda = torch.cuda

local saved_n, saved_cap
local function gc() collectgarbage(); collectgarbage() end
local function sim(n, cap) gc(); torch._sim_configure(n, cap) end

-- The transfers made by f, as {h2d = {count, bytes}, ...} deltas.
local function transfers(f)
  cuda.reset_transfers()
  f()
  return cuda.transfers()
end
local function counts(t) return { t.h2d.count, t.d2h.count, t.d2d.count } end

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return (tostring(e):gsub("^[^\n]-:%d+: ", ""))
end

describe("moving tensors", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(3) end)
  teardown(function() sim(saved_n, saved_cap) end)
  before_each(function() sim(3) end)

  describe("x:to, x:cuda, x:cpu", function()
    it("move to the device asked for, keeping the values", function()
      local x = torch.tensor({ { 1.5, 2 }, { 3, 4 } })
      for _, to in ipairs({ "cuda:1", 1, torch.device("cuda", 1), torch.device("cuda:1") }) do
        local y = x:to(to)
        assert.are.equal(torch.device("cuda:1"), y.device)
        assert.is_true(y.is_cuda)
        assert.are.same(x:tolist(), y:tolist())
        assert.are.equal(torch.float32, y.dtype)
      end
      assert.are.equal(torch.device("cuda:0"), x:to("cuda").device)
      assert.are.equal(torch.device("cuda:0"), x:cuda().device)
      assert.are.equal(torch.device("cuda:2"), x:cuda(2).device)
      assert.are.equal(torch.device("cuda:2"), x:cuda("cuda:2").device)
      assert.are.equal(torch.device("cpu"), x:cuda(2):cpu().device)
      assert.is_false(x:cuda(2):cpu().is_cuda)
      assert.are.equal(torch.device("cpu"), x:cuda(1):to("cpu").device)
    end)

    it("x:to(dtype), x:to(dev, dtype), x:to({device=, dtype=}), x:to(other)", function()
      local x = torch.tensor({ 1.5, -2.5 })
      local a = x:to(torch.float64)
      assert.are.equal(torch.float64, a.dtype)
      assert.are.equal(torch.device("cpu"), a.device)
      local b = x:to("cuda:1", torch.float64)
      assert.are.equal(torch.float64, b.dtype)
      assert.are.equal(torch.device("cuda:1"), b.device)
      local c = b:to("cpu", torch.int32) -- the book's x.to("cpu", T.double), another dtype
      assert.are.equal(torch.int32, c.dtype)
      assert.are.same({ 1, -2 }, c:tolist())
      local d = x:to({ device = "cuda:2", dtype = torch.float16 })
      assert.are.equal(torch.float16, d.dtype)
      assert.are.equal(torch.device("cuda:2"), d.device)
      local e = x:to({ device = torch.device("cuda", 0) })
      assert.are.equal(torch.device("cuda:0"), e.device)
      local f = x:to(d) -- like another tensor: its device and dtype
      assert.are.equal(torch.device("cuda:2"), f.device)
      assert.are.equal(torch.float16, f.dtype)
      local g = x:to(torch.float64, "cuda:1") -- either order
      assert.are.equal(torch.device("cuda:1"), g.device)
      assert.are.equal(torch.float64, g.dtype)
      assert.are.equal(torch.float64, x:cuda(1):double().dtype)
      assert.are.equal(torch.device("cuda:1"), x:cuda(1):double().device)
    end)

    it("returns the very same object when nothing changes, without copying", function()
      local z = torch.ones(2, 3, { device = "cuda:1" })
      local t = transfers(function()
        assert.is_true(rawequal(z:cuda(1), z))
        assert.is_true(rawequal(z:to("cuda:1"), z))
        assert.is_true(rawequal(z:to(torch.device("cuda", 1)), z))
        assert.is_true(rawequal(z:to(z.device, z.dtype), z))
        assert.is_true(rawequal(z:to({ device = "cuda:1" }), z))
        assert.is_true(rawequal(z:to(torch.float32), z))
        assert.is_true(rawequal(z:float(), z))
        local c = torch.ones(2)
        assert.is_true(rawequal(c:cpu(), c))
        assert.is_true(rawequal(c:to("cpu"), c))
      end)
      assert.are.same({ 0, 0, 0 }, counts(t))
      assert.is_false(rawequal(z:cuda(0), z))
      assert.is_false(rawequal(z:double(), z))
      -- the current device is cuda:0, so a bare x:cuda() moves z
      assert.are.equal(torch.device("cuda:0"), z:cuda().device)
    end)

    it("a moved tensor is a copy: writing to it leaves the original alone", function()
      local x = torch.zeros(3)
      local y = x:cuda(1)
      y:fill_(5)
      assert.are.same({ 0.0, 0.0, 0.0 }, x:tolist())
      local w = y:cuda(2)
      w:add_(1)
      assert.are.same({ 5.0, 5.0, 5.0 }, y:tolist())
      assert.are.same({ 6.0, 6.0, 6.0 }, w:tolist())
    end)

    it("moves views and non-contiguous tensors element by element", function()
      local x = torch.arange(12):view(3, 4)
      local v = x:t():narrow(1, 2, 2) -- 2x3, strided
      local y = v:cuda(1)
      assert.are.same(v:tolist(), y:tolist())
      assert.is_true(y:is_contiguous())
      local back = y:t():cpu()
      assert.are.same(v:t():tolist(), back:tolist())
      local b = torch.tensor({ 1.0, 2.0 }):view(2, 1):expand(2, 3) -- stride 0
      assert.are.same({ { 1.0, 1.0, 1.0 }, { 2.0, 2.0, 2.0 } }, b:cuda(2):tolist())
    end)

    it("is_cuda and device fields", function()
      local x = torch.ones(1)
      assert.is_false(x.is_cuda)
      assert.are.equal("cpu", tostring(x.device))
      local y = x:cuda(1)
      assert.is_true(y.is_cuda)
      assert.are.equal("cuda:1", tostring(y.device))
      assert.are.equal("torch.cuda.FloatTensor", y:type())
    end)

    it("rejects what is not a device", function()
      local x = torch.ones(2)
      assert.matches("cuda:3 is not available: there are 3 simulated CUDA devices (cuda:0 to cuda:2)",
        err(function() return x:cuda(3) end), nil, true)
      assert.matches("expected a CUDA device", err(function() return x:cuda("cpu") end), nil, true)
      assert.matches("invalid device string 'gpu:1'", err(function() return x:to("gpu:1") end), nil, true)
      assert.matches("invalid device ordinal -1", err(function() return x:to(-1) end), nil, true)
      sim(0)
      assert.matches("no CUDA devices are present", err(function() return x:cuda() end), nil, true)
    end)
  end)

  describe("torch.cuda.transfers", function()
    it("counts host-to-device, device-to-host and device-to-device copies with their bytes", function()
      local x = torch.ones(2, 3) -- 24 bytes
      local t = transfers(function()
        local a = x:cuda(0)    -- h2d
        local b = a:cuda(1)    -- d2d
        local c = b:cpu()      -- d2h
        local d = b:to("cuda:2", torch.float64) -- d2d, the source's 24 bytes
      end)
      assert.are.same({ count = 1, bytes = 24 }, t.h2d)
      assert.are.same({ count = 1, bytes = 24 }, t.d2h)
      assert.are.same({ count = 2, bytes = 48 }, t.d2d)
    end)

    it("counts printing, item() and tolist() of a device tensor as one d2h each", function()
      local y = torch.rand(100, 100, { device = "cuda:1" }) -- printing summarises, still one copy
      local s = torch.ones(1, { device = "cuda:1" })
      local t = transfers(function() local _ = tostring(y) end)
      assert.are.same({ 0, 1, 0 }, counts(t))
      assert.are.equal(40000, t.d2h.bytes)
      t = transfers(function() local _ = s:item() end)
      assert.are.same({ 0, 1, 0 }, counts(t))
      t = transfers(function() local _ = y:narrow(1, 1, 2):tolist() end)
      assert.are.same({ 0, 1, 0 }, counts(t))
      assert.are.equal(800, t.d2h.bytes)
      t = transfers(function() local _ = y:sum():item() end)
      assert.are.same({ 0, 1, 0 }, counts(t))
      -- printing a CPU tensor moves nothing
      t = transfers(function() local _ = tostring(torch.ones(3)) end)
      assert.are.same({ 0, 0, 0 }, counts(t))
    end)

    it("counts nothing for work that stays on one device", function()
      local x = torch.rand(4, 4, { device = "cuda:2" })
      local t = transfers(function()
        local y = torch.ones(4, 4, { device = "cuda:2" })
        local z = (x + y):matmul(x):softmax(2):sum(1)
        local w = torch.cat({ x, y }):t():contiguous():clone()
        x:add_(1)
        x[{ 1, 1 }] = 5
        x[2] = y[1]
        local r = torch.rand(3, { device = "cuda:2" })
        local e = torch.eye(3, { device = "cuda:2" })
        local a = torch.arange(5, { device = "cuda:2" })
        local f = torch.full({ 2 }, 3, { device = "cuda:2" })
        local u = torch.zeros_like(x)
      end)
      assert.are.same({ 0, 0, 0 }, counts(t))
    end)

    it("counts equal() and allclose() as one 1-byte d2h: their answer is a Lua boolean", function()
      local x, y = torch.rand(50, 50, { device = "cuda:2" }), torch.rand(50, 50, { device = "cuda:2" })
      local t = transfers(function() local _ = x:equal(y) end)
      assert.are.same({ count = 1, bytes = 1 }, t.d2h)
      t = transfers(function() local _ = x:allclose(y) end)
      assert.are.same({ 0, 1, 0 }, counts(t))
      assert.are.equal(1, t.d2h.bytes)
    end)

    it("counts data built on the host and moved: torch.tensor(..., {device=}) is one h2d", function()
      local t = transfers(function() local _ = torch.tensor({ 1, 2, 3 }, { device = "cuda:0" }) end)
      assert.are.same({ 1, 0, 0 }, counts(t))
      assert.are.equal(24, t.h2d.bytes)
    end)

    it("copy_ and assignment across devices are allowed and counted", function()
      local dst = torch.zeros(2, 2, { device = "cuda:1" })
      local t = transfers(function()
        dst:copy_(torch.ones(2, 2))                                   -- h2d
        dst:copy_(torch.full({ 2, 2 }, 3.0, { device = "cuda:0" }))   -- d2d
        dst[1] = torch.tensor({ 7.0, 8.0 })                           -- h2d
        local h = torch.zeros(2, 2)
        h:copy_(dst)                                                  -- d2h
      end)
      assert.are.same({ 2, 1, 1 }, counts(t))
      assert.are.same({ { 7.0, 8.0 }, { 3.0, 3.0 } }, dst:tolist())
      assert.are.equal(torch.device("cuda:1"), dst.device)
    end)

    it("reset_transfers starts the counts again", function()
      local _ = torch.ones(3):cuda(0)
      assert.is_true(cuda.transfers().h2d.count >= 1)
      cuda.reset_transfers()
      assert.are.same({ h2d = { count = 0, bytes = 0 }, d2h = { count = 0, bytes = 0 }, d2d = { count = 0, bytes = 0 } },
        cuda.transfers())
    end)

    it("makes the book's point: many small copies cost more than one big one", function()
      local x = torch.rand(100, { device = "cuda:0" })
      local many = transfers(function()
        local s = 0
        for i = 1, 100 do s = s + x[i]:item() end -- one d2h per element
      end)
      local one = transfers(function()
        local s = 0
        for _, v in ipairs(x:tolist()) do s = s + v end
      end)
      assert.are.equal(100, many.d2h.count)
      assert.are.equal(1, one.d2h.count)
      assert.are.equal(many.d2h.bytes, one.d2h.bytes)
    end)
  end)

  -- Simulated devices configured as a real GPU's memory (_sim_configure's
  -- third argument): copies go through the memcpy slots, so these specs
  -- run the path real GPUs take. Raw bytes go straight into a contiguous
  -- destination of the source's dtype; only a dtype change or a strided
  -- destination is staged on the device first.
  describe("copies through device memcpy (as on a real GPU)", function()
    before_each(function() gc(); torch._sim_configure(2, 0, true) end)

    -- Runs f with peaks reset; returns the transfers and cuda:0's peak
    -- allocation above what was live before.
    local function measure(f)
      gc()
      local base = cuda.memory_allocated(0)
      cuda.reset_peak_memory_stats(0)
      local t = transfers(f)
      return t, cuda.max_memory_allocated(0) - base
    end

    it("h2d into a new contiguous tensor of the same dtype: one copy, no staging block", function()
      local x = torch.arange(1000, { dtype = torch.float32 }) -- 4000 bytes, a 4096-byte block
      local y
      local t, peak = measure(function() y = x:cuda(0) end)
      assert.are.same({ 1, 0, 0 }, counts(t))
      assert.are.equal(4000, t.h2d.bytes)
      assert.are.equal(4096, peak) -- y alone
      assert.are.same(x:tolist(), y:tolist())
      local v = torch.arange(12, { dtype = torch.float64 }):view(3, 4):t() -- a strided source
      local w
      t = measure(function() w = v:cuda(0) end)
      assert.are.same({ 1, 0, 0 }, counts(t))
      assert.are.equal(96, t.h2d.bytes)
      assert.are.same(v:tolist(), w:tolist())
    end)

    it("d2h into a new contiguous tensor, from contiguous and strided sources", function()
      local y = torch.arange(24, { dtype = torch.int32, device = "cuda:0" }):view(4, 6)
      local t = transfers(function()
        assert.are.same(torch.arange(24, { dtype = torch.int32 }):view(4, 6):tolist(), y:cpu():tolist())
      end)
      assert.are.same({ 0, 1, 0 }, counts(t))
      local yt
      t = transfers(function() yt = y:t():cpu() end)
      assert.are.same({ 0, 1, 0 }, counts(t))
      assert.are.equal(96, t.d2h.bytes)
      assert.is_true(yt:is_contiguous())
      assert.are.same(y:cpu():t():tolist(), yt:tolist())
    end)

    it("a dtype change is staged on the device: one copy of the source's bytes", function()
      local x = torch.tensor({ 1.5, -2.25, 3.0, 1e10 }) -- float32, 16 bytes
      local y
      local t, peak = measure(function() y = x:to("cuda:0", torch.float64) end)
      assert.are.same({ 1, 0, 0 }, counts(t))
      assert.are.equal(16, t.h2d.bytes)
      assert.are.equal(1024, peak) -- y's 512-byte block and the float32 staging block
      assert.are.equal(torch.float64, y.dtype)
      assert.are.same({ 1.5, -2.25, 3.0, 1e10 }, y:tolist())
      local back
      t = transfers(function() back = y:to("cpu", torch.int64) end)
      assert.are.same({ 0, 1, 0 }, counts(t))
      assert.are.equal(32, t.d2h.bytes)
      assert.are.same({ 1, -2, 3, 10000000000 }, back:tolist())
    end)

    it("a strided destination is staged: copy_ into a transposed device view", function()
      local dst = torch.zeros(3, 2, { device = "cuda:0" })
      local src = torch.tensor({ { 1.0, 2.0, 3.0 }, { 4.0, 5.0, 6.0 } })
      local t, peak = measure(function() dst:t():copy_(src) end)
      assert.are.same({ 1, 0, 0 }, counts(t))
      assert.are.equal(24, t.h2d.bytes)
      assert.are.equal(512, peak) -- the staging block
      assert.are.same({ { 1.0, 4.0 }, { 2.0, 5.0 }, { 3.0, 6.0 } }, dst:tolist())
      -- into a narrowed, still contiguous part: direct, the rest untouched
      local row = torch.zeros(4, 3, { device = "cuda:0" })
      t, peak = measure(function() row:narrow(1, 2, 2):copy_(torch.ones(2, 3)) end)
      assert.are.same({ 1, 0, 0 }, counts(t))
      assert.are.equal(0, peak)
      assert.are.same({ { 0, 0, 0 }, { 1, 1, 1 }, { 1, 1, 1 }, { 0, 0, 0 } }, row:tolist())
      -- a broadcast source is materialised on its own side first
      local b = torch.zeros(2, 3, { device = "cuda:0" })
      t = transfers(function() b:copy_(torch.tensor({ 7.0, 8.0, 9.0 })) end)
      assert.are.same({ 1, 0, 0 }, counts(t))
      assert.are.equal(24, t.h2d.bytes)
      assert.are.same({ { 7.0, 8.0, 9.0 }, { 7.0, 8.0, 9.0 } }, b:tolist())
    end)

    it("device to device: direct, staged for a dtype change", function()
      local a = torch.arange(6, { device = "cuda:0" }):view(2, 3)
      local b, c
      local t = transfers(function()
        b = a:cuda(1)
        c = a:to("cuda:1", torch.float32)
      end)
      assert.are.same({ 0, 0, 2 }, counts(t))
      assert.are.equal(96, t.d2d.bytes)
      assert.are.same({ { 0, 1, 2 }, { 3, 4, 5 } }, b:tolist())
      assert.are.same({ { 0.0, 1.0, 2.0 }, { 3.0, 4.0, 5.0 } }, c:tolist())
      assert.are.equal(torch.float32, c.dtype)
    end)
  end)

  it("torch.manual_seed gives the same numbers on every device", function()
    local r = {}
    for _, dev in ipairs({ "cpu", "cuda:0", "cuda:1", "cuda:2" }) do
      torch.manual_seed(2024)
      r[#r + 1] = { torch.rand(2, 3, { device = dev }):tolist(), torch.randn(4, { device = dev }):tolist(),
        torch.randint(0, 100, { 5 }, { device = dev }):tolist() }
    end
    for i = 2, #r do assert.are.same(r[1], r[i]) end
    -- and the stream continues the same way whatever device draws next
    torch.manual_seed(7)
    local a1, a2 = torch.rand(3):tolist(), torch.rand(3):tolist()
    torch.manual_seed(7)
    local b1, b2 = torch.rand(3, { device = "cuda:1" }):tolist(), torch.rand(3, { device = "cuda:2" }):tolist()
    assert.are.same(a1, b1)
    assert.are.same(a2, b2)
  end)

  it("prints device tensors with device='cuda:i'", function()
    assert.are.equal("tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='cuda:2')",
      tostring(torch.ones(2, 3, { device = "cuda:2" })))
    assert.are.equal("tensor([1, 2], device='cuda:1')", tostring(torch.tensor({ 1, 2 }):cuda(1)))
    assert.are.equal("tensor([1., 2.], device='cuda:0', dtype=torch.float64)",
      tostring(torch.tensor({ 1, 2 }, { dtype = torch.float64, device = "cuda:0" })))
  end)
end)
