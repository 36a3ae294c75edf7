-- Memory: views share (and keep alive) their storage, __gc/__close are
-- safe to run more than once, and loops of large temporaries stay bounded
-- because the binding tells Lua's collector about tensor memory. There is
-- no host-memory query in the API, so the process's resident set size
-- (VmRSS from /proc/self/status) is the measure.
local torch = require("torch")
local H = require("helpers")

local MiB = 1024 -- VmRSS is in KiB
-- AddressSanitizer keeps freed memory in quarantine (256 MiB by default)
-- and pads every block, so its RSS bounds get that much slack.
local SLACK = H.UNDER_ASAN and 512 * MiB or 0

-- Known bugs in files this suite may not fix (name -> what is wrong).
local KNOWN = {}
local it = H.it_unless(KNOWN, it, pending)

local function full_gc()
  collectgarbage()
  collectgarbage()
end

describe("storage sharing", function()
  it("views share storage with their base", function()
    local x = torch.zeros(4, 4)
    local views = {x:view(16), x:t(), x[2], x[{{}, 3}], x:narrow(1, 2, 2), x:unsqueeze(1),
                   x:transpose(1, 2), x:permute(2, 1), x:reshape(2, 8), x:flatten(), x:squeeze(), x[{{1, 4, 2}}]}
    for i, v in ipairs(views) do
      x:fill_(0)
      v:fill_(i)
      assert.are.equal(i + 0.0, x:max():item(), "view " .. i)
    end
    -- an expanded view cannot be written (PyTorch refuses: several of its
    -- elements are one memory location), so it is seen through the base
    local e = x:expand(2, 4, 4)
    x:fill_(7)
    H.assert_list_equal(e:min():item(), 7.0)
    H.assert_list_equal(e:max():item(), 7.0)
  end)
  it("copies do not share storage", function()
    local x = torch.zeros(4)
    for _, c in ipairs({x:clone(), x:contiguous():clone(), x:double(), x:to(torch.int32), x + 0, x * 1,
                        torch.tensor(x), torch.zeros(2, 2):t():contiguous()}) do
      c:fill_(5)
    end
    H.assert_list_equal(x:tolist(), {0.0, 0.0, 0.0, 0.0})
  end)
  it("a view keeps the storage alive after the base is collected", function()
    local v
    do
      local x = torch.arange(100000)
      v = x[{{99991, 100000}}]
    end
    full_gc()
    H.assert_list_equal(v:tolist(), H.range(99990, 99999))
    v[1] = -1
    assert.are.equal(-1, v[1]:item())
  end)
  it("a view stays valid after its base is closed", function()
    local x = torch.arange(10)
    local v = x:view(2, 5)[2]
    getmetatable(x).__close(x)
    H.assert_list_equal(v:tolist(), {5, 6, 7, 8, 9})
  end)
  it("a tensor pushed twice to Lua is the same object", function()
    local x = torch.ones(3)
    assert.is_true(rawequal(x, x:contiguous()))
    assert.is_true(rawequal(x, x:float()))
    assert.is_true(rawequal(x, x:add_(1)))
    assert.is_true(rawequal(x, x:to("cpu")))
  end)
end)

describe("__gc and __close", function()
  it("<close> frees the tensor at the end of the scope", function()
    local keep
    do
      local x <close> = torch.ones(2)
      keep = x
      assert.are.equal(2.0, x:sum():item())
    end
    H.errors(function() return keep:sum() end, "already freed")
  end)
  it("__close and __gc may run twice (and after each other) without harm", function()
    local x = torch.ones(1000)
    local mt = getmetatable(x)
    mt.__close(x)
    mt.__close(x)
    mt.__gc(x)
    mt.__gc(x)
    H.errors(function() return x:numel() end, "already freed")
    x = nil
    full_gc() -- the collector's own __gc after the manual ones
    assert.are.equal(3.0, torch.ones(3):sum():item())
  end)
  it("closing one tensor leaves other tensors on the same storage working", function()
    local x = torch.arange(6):view(2, 3)
    local y = x:t()
    local z = x:clone()
    do
      local c <close> = x
    end
    H.assert_list_equal(y:tolist(), {{0, 3}, {1, 4}, {2, 5}})
    H.assert_list_equal(z:tolist(), {{0, 1, 2}, {3, 4, 5}})
  end)
  it("<close> runs when the scope is left by an error", function()
    local keep
    local ok = pcall(function()
      local x <close> = torch.ones(2)
      keep = x
      error("boom")
    end)
    assert.is_false(ok)
    H.errors(function() return keep:sum() end, "already freed")
  end)
  it("__gc of a closed tensor's metatable call with a non-tensor is refused", function()
    local mt = getmetatable(torch.ones(1))
    assert.is_false(pcall(mt.__gc, {}))
  end)
  it("many small tensors are collected", function()
    full_gc()
    local before = collectgarbage("count")
    for i = 1, 20000 do
      local t = torch.tensor({i, i + 1})
      local _ = t + 1
    end
    full_gc()
    local after = collectgarbage("count")
    assert.is_true(after - before < 2048, string.format("Lua heap grew by %.0f KiB", after - before))
  end)
end)

describe("bounded memory in loops of large temporaries", function()
  local rss0 = H.rss_kib()
  if not rss0 then
    pending("no /proc/self/status on this system")
    return
  end
  -- ThreadSanitizer's shadow memory (several bytes for each byte written,
  -- kept after the block is freed) counts in VmRSS, so VmRSS no longer
  -- measures the engine's memory: these bounds are checked by the plain
  -- and the ASan runs.
  if H.UNDER_TSAN then
    pending("VmRSS bounds: not under ThreadSanitizer (its shadow memory counts in VmRSS)")
    return
  end

  -- runs body(i) n times and returns the growth of VmRSS (KiB) at its peak
  -- and after a full collection
  local function measure(n, body)
    full_gc()
    local base = H.rss_kib()
    local peak = base
    for i = 1, n do
      body(i)
      if i % 10 == 0 then peak = math.max(peak, H.rss_kib()) end
    end
    full_gc()
    return peak - base, H.rss_kib() - base
  end

  it("200 iterations of y = x + x on 8M floats stay within a few temporaries", function()
    local x = torch.ones(8 * 1024 * 1024) -- 32 MiB
    x:add_(0) -- touch it
    local lua0 = collectgarbage("count")
    local peak, after = measure(200, function()
      local y = x + x
      local _ = y
    end)
    -- 200 x 32 MiB = 6.25 GiB were allocated in all
    assert.is_true(peak < 400 * MiB + SLACK, string.format("VmRSS peaked %.0f MiB above the start", peak / MiB))
    assert.is_true(after < 300 * MiB + SLACK, string.format("VmRSS stayed %.0f MiB above the start", after / MiB))
    assert.is_true(collectgarbage("count") - lua0 < 4096, "the Lua heap grew")
    assert.are.equal(2.0 * 8 * 1024 * 1024, (x + x):sum():item())
  end)
  it("chains of temporaries (x * 2 + 1):exp() stay bounded", function()
    local x = torch.zeros(4 * 1024 * 1024)
    local peak = measure(100, function()
      local y = (x * 2 + 1):exp():sum()
      local _ = y
    end)
    assert.is_true(peak < 400 * MiB + SLACK, string.format("VmRSS peaked %.0f MiB above the start", peak / MiB))
  end)
  it("temporaries of changing sizes stay bounded", function()
    local peak = measure(120, function(i)
      local n = (1 + i % 7) * 1024 * 1024
      local y = torch.ones(n, {dtype = torch.float64}) * i
      local _ = y:sum()
    end)
    assert.is_true(peak < 600 * MiB + SLACK, string.format("VmRSS peaked %.0f MiB above the start", peak / MiB))
  end)
  it("views of large tensors made in a loop do not copy", function()
    local x = torch.zeros(2048, 2048) -- 16 MiB
    local peak = measure(500, function(i)
      local v = x:t()[1 + i % 2048]:view(-1)
      local _ = v:narrow(1, 1, 10)
    end)
    assert.is_true(peak < 64 * MiB + SLACK, string.format("VmRSS peaked %.0f MiB above the start", peak / MiB))
  end)
  it("failing calls do not leak", function()
    local x = torch.zeros(1024 * 1024)
    local _, after = measure(300, function()
      pcall(function() return x + torch.ones(3) end)
      pcall(function() return x:view(7, -1) end)
      pcall(function() x:add_(torch.ones(2, 1024 * 1024)) end)
      pcall(function() return torch.tensor({1, {2}}) end)
    end)
    assert.is_true(after < 64 * MiB + SLACK, string.format("VmRSS stayed %.0f MiB above the start", after / MiB))
  end)
  it("a failed x[i] does not keep the tensor alive", function()
    local _, after = measure(30, function()
      local x = torch.empty(4 * 1024 * 1024) -- 16 MiB, a fresh one each time
      x:fill_(1)
      pcall(function() return x[0] end)
      pcall(function() return x[-5000000] end)
    end)
    assert.is_true(after < 128 * MiB + SLACK, string.format("VmRSS stayed %.0f MiB above the start", after / MiB))
  end)
  it("tolist of a large tensor is collected", function()
    local x = torch.arange(1000000)
    local _, after = measure(10, function()
      local l = x:tolist()
      assert.are.equal(999999, l[1000000])
    end)
    assert.is_true(after < 128 * MiB + SLACK, string.format("VmRSS stayed %.0f MiB above the start", after / MiB))
  end)
end)

describe("in-place writes whose input overlaps the output", function()
  -- PyTorch refuses these; gshell computes them as if the input had been
  -- read before any element was written (what `x + x:t()` gives).
  it("x:add_(x:t()) equals x + x:t()", function()
    local x = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } })
    local expected = (x + x:t()):tolist()
    x:add_(x:t())
    assert.are.same(expected, x:tolist())
  end)

  it("a row broadcast from the same tensor is read before it is overwritten", function()
    local z = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } })
    z:mul_(z[1])
    assert.are.same({ { 1.0, 4.0 }, { 3.0, 8.0 } }, z:tolist())
  end)

  it("a shifting slice assignment copies the source first", function()
    local y = torch.arange(6):float()
    y[{ { 2, 6 } }] = y[{ { 1, 5 } }]
    assert.are.same({ 0.0, 0.0, 1.0, 2.0, 3.0, 4.0 }, y:tolist())
    local v = torch.arange(6)
    v:narrow(1, 1, 5):copy_(v:narrow(1, 2, 5))
    assert.are.same({ 1, 2, 3, 4, 5, 5 }, v:tolist())
  end)

  it("the same view on both sides stays element for element", function()
    local w = torch.tensor({ 1.0, 2.0, 3.0 })
    w:add_(w)
    assert.are.same({ 2.0, 4.0, 6.0 }, w:tolist())
  end)
end)

-- (issue 14) the host allocator keeps freed blocks for reuse, up to a cap,
-- and gives them back: torch._host_memory() is (bytes in use, bytes cached).
describe("the host allocator's cache", function()
  local BLOCK = 4 << 20 -- a 1M-element float32 tensor: one 4 MiB size class
  local function free_blocks(n)
    local xs = {}
    for i = 1, n do xs[i] = torch.empty(BLOCK // 4) end
    xs = nil
    full_gc()
  end
  local saved
  before_each(function() saved = torch._host_cache_limit() end)
  after_each(function() torch._host_cache_limit(saved) end)

  it("keeps freed blocks only up to its cap; the rest goes back at once", function()
    torch._host_cache_limit(8 << 20)
    free_blocks(6)
    local _, cached = torch._host_memory()
    assert.is_true(cached <= 8 << 20, "cached " .. cached)
    assert.is_true(cached >= BLOCK, "cached " .. cached) -- it does cache below the cap
  end)

  it("lowering the cap frees what is above it now; the default is 4 GiB at most", function()
    torch._host_cache_limit(64 << 20)
    free_blocks(6)
    local _, before = torch._host_memory()
    assert.is_true(before >= 6 * BLOCK, "cached " .. before)
    local old = torch._host_cache_limit(BLOCK)
    assert.are.equal(64 << 20, old)
    local _, after = torch._host_memory()
    assert.is_true(after <= BLOCK, "cached " .. after)
    torch._host_cache_limit(0)
    local default = torch._host_cache_limit(0)
    assert.is_true(default > 0 and default <= 4 << 30, "default " .. default)
    H.errors(function() torch._host_cache_limit(-1) end, "expected a number of bytes >= 0, got -1")
  end)

  it("torch.cuda.empty_cache() on simulated GPUs empties it", function()
    if not H.gpus(1) then return pending("needs a CUDA device") end
    if not torch.cuda.is_simulated() then return pending("real GPUs: empty_cache is the device's only") end
    torch._host_cache_limit(64 << 20)
    free_blocks(4)
    local in_use, cached = torch._host_memory()
    assert.is_true(cached >= 4 * BLOCK, "cached " .. cached)
    local keep = torch.ones(1000) -- a live tensor stays in use
    torch.cuda.empty_cache()
    local in_use2, cached2 = torch._host_memory()
    assert.are.equal(0, cached2)
    assert.is_true(in_use2 >= in_use, "in use " .. in_use .. " -> " .. in_use2)
    assert.are.equal(1000.0, keep:sum():item())
    H.release_gpus()
  end)
end)
