-- The profiler on a simulated GPU that models a real one (issue 29 phase
-- 2, docs/profiling.md "Profiles on a modelled GPU"): device events carry
-- their modelled start and end (the time model's formulas, worked here by
-- hand for a V100), what bound them and their unit; copies run on copy
-- engine lanes beside the streams; the table gains FLOPs, Peak% and
-- Bound; torch.cuda.explain places each op on the roofline and says why;
-- with `host` nothing is modelled and the table is as before.
local torch = require("torch")
local H = require("helpers")
local R = require("gshell_run")

-- V100 (docs/gpu-models.md): 15.7 TFLOP/s FP32, 900 GB/s, 80 SMs, 2 us launch
local PEAK, BW, SMS, LAUNCH = 15.7e12, 900e9, 80, 2e-6
-- PCIe 3 x16 after encoding x 0.78, pageable half of it; 10 us per copy
local PINNED = 8e9 * 128 / 130 * 16 / 8 * 0.78
local PAGEABLE = PINNED / 2

-- n simulated devices with model `spec` for the test, restored after
local function with_model(spec, n) H.with_model(finally, spec, n or 1) end

local function named(p, name)
  local t = {}
  for _, e in ipairs(p.events) do if e.name == name then t[#t + 1] = e end end
  return t
end

local function row(rows, name)
  for _, r in ipairs(rows) do if r.name == name then return r end end
end

-- a modelled span: whole ns at both ends, so within 2 ns of the formula
local function span_is(e, seconds)
  local got = e.t1 - e.t0
  assert(math.abs(got - seconds * 1e9) <= 2, string.format("%s: expected %.1f ns, got %d", e.name, seconds * 1e9, got))
end

-- the product [n, n] x [n, n] on a V100 in float32 (docs/time-model.md)
local function gemm_time(n)
  local tiles = math.ceil(n / 128) ^ 2
  local fill = tiles / (math.ceil(tiles / SMS) * SMS)
  local eff = 0.92 * fill * (n / (n + 64))
  return LAUNCH + 2 * n ^ 3 / (PEAK * eff)
end

describe("the profiler on a modelled GPU", function()
  it("a memory-bound kernel takes bytes / bandwidth + launch, and its row says memory and its share of 900 GB/s", function()
    with_model("v100")
    local n = 1 << 24 -- 64 MiB: beyond the L2
    local x = torch.ones(n, { device = "cuda:0" })
    local p = torch.profiler.profile(function() local _ = x:neg() end)
    local e = named(p, "neg")[1]
    assert.is_true(e.modelled)
    assert.are.same({ "memory", "fp32", 2 * 4 * n, n }, { e.bound, e.unit, e.bytes, e.flops })
    local t = LAUNCH + 2 * 4 * n / BW -- 151.13 us
    span_is(e, t)
    local r = row(p:key_averages(), "neg")
    assert.are.equal("memory", r.bound)
    local share = 2 * 4 * n / t / BW -- 0.9868
    assert(math.abs(r.peak_share - share) < 1e-4, tostring(r.peak_share))
    local text = p:table()
    assert.truthy(text:find("GFLOP/s%s+FLOPs%s+Peak%%%s+Bound\n"), text)
    assert.truthy(text:find("\nneg%s+cuda:0%s+kernel%s+1%s+151%.1%d%dus.-16%.78 M%s+98%.7%%%s+memory\n"), text)
    assert.truthy(text:find("cuda:0: modelled on a Tesla V100-SXM2-16GB (v100)", 1, true), text)
  end)

  it("a large product is compute-bound at the cuBLAS-like efficiency; a tiny op is launch-bound", function()
    with_model("v100")
    local A = torch.ones(2048, 2048, { device = "cuda:0" })
    local s = torch.ones(10, { device = "cuda:0" })
    local p = torch.profiler.profile(function() local _ = A:matmul(A); _ = s * 2 end)
    local mm = named(p, "mm")[1]
    assert.are.same({ "compute", "fp32" }, { mm.bound, mm.unit })
    -- 256 tiles in 4 waves of 80 (fill 0.8), depth 2048/2112, best 0.92: 1.535 ms
    span_is(mm, gemm_time(2048))
    local r = row(p:key_averages(), "mm")
    assert(math.abs(r.peak_share - 2 * 2048 ^ 3 / gemm_time(2048) / PEAK) < 1e-4, tostring(r.peak_share))
    local mul = named(p, "mul")[1]
    assert.are.equal("launch", mul.bound)
    -- 10 elements: one block of 640 slots; 120 bytes inside L2
    span_is(mul, LAUNCH + math.max(10 / (PEAK / 640), 120 / (2 * BW)))
  end)

  it("copies run on the copy engines' lanes at the PCIe rate; the host's wait ends at the copy's end plus a sync", function()
    with_model("v100")
    local h = torch.ones(1000000) -- 4 MB, pageable
    local g
    local p = torch.profiler.profile(function()
      g = h:cuda(0)
      local _ = g:cpu()
    end)
    local up, down = named(p, "copy_h2d")[1], named(p, "copy_d2h")[1]
    assert.are.same({ "copy", "cuda:0/in", "copy", 4000000 }, { up.kind, up.lane, up.bound, up.bytes })
    assert.are.same({ "copy", "cuda:0/out", "copy" }, { down.kind, down.lane, down.bound })
    span_is(up, 10e-6 + 4e6 / PAGEABLE) -- 661.04 us
    span_is(down, 10e-6 + 4e6 / PAGEABLE)
    -- the copy from the host is waited for: the host's clock jumps to its
    -- end and pays the driver's 6 us for the synchronisation
    local w = named(p, "wait")[1]
    assert.are.same({ "sync", "host", "host" }, { w.kind, w.lane, w.bound })
    assert.is_true(w.t1 >= up.t1 + 6000 - 2, w.t1 - up.t1)
    -- lanes: the streams, then the engines; the table's Peak% of a
    -- pageable copy is about half the pinned rate
    local lanes = {}
    for _, l in ipairs(p:lanes()) do lanes[#lanes + 1] = l.lane end
    assert.are.same({ "host", "cuda:0/in", "cuda:0/out" }, lanes)
    assert.are.equal("cuda:0 copies in", torch.profiler.lane_label("cuda:0/in"))
    local r = row(p:key_averages(), "copy_h2d")
    assert(math.abs(r.peak_share - 4e6 / (10e-6 + 4e6 / PAGEABLE) / PINNED) < 1e-4, tostring(r.peak_share))
    -- the Chrome trace names each engine as a thread of the device
    local names = {}
    for _, ev in ipairs(p:chrome_trace().traceEvents) do
      if ev.name == "thread_name" and ev.pid == 1 then names[ev.tid] = ev.args.name end
    end
    assert.are.equal("copy engine: copies in", names[1000])
    assert.are.equal("copy engine: copies out", names[1001])
  end)

  it("a copy on one stream and a product on another overlap in the profile", function()
    with_model("v100")
    local A = torch.ones(1024, 1024, { device = "cuda:0" })
    -- 256 MiB pinned: 21.8 ms over PCIe 3, far longer than the host's
    -- pauses between two calls on a busy 2-core machine (9 ms seen)
    local h = torch.empty(1 << 26):pin_memory()
    local s = torch.cuda.Stream(0)
    -- no collection between the two launches: the host's real work counts
    -- on its clock, and a full cycle under a sanitizer outlasts the copy
    -- (restarted here, not in a finally: busted keeps one, with_model's)
    collectgarbage("collect")
    collectgarbage("stop")
    local ok, p = pcall(torch.profiler.profile, function()
      do
        local scope <close> = torch.cuda.stream(s)
        local _ = h:to("cuda:0", { non_blocking = true })
      end
      local _ = A:matmul(A) -- queued right after: it need not wait for the copy
    end)
    collectgarbage("restart")
    assert(ok, p)
    local mm, up = named(p, "mm")[1], named(p, "copy_h2d")[1]
    assert.are.same({ "cuda:0/in", "cuda:0/0" }, { up.lane, mm.lane })
    span_is(up, 10e-6 + (4 << 26) / PINNED)
    span_is(mm, gemm_time(1024))
    -- the product starts while the copy runs (however slowly the host
    -- queued it, as long as it took less than the copy's 21.8 ms)
    assert.is_true(mm.t0 >= up.t0 and mm.t0 < up.t1, string.format("mm at %d, copy %d..%d", mm.t0, up.t0, up.t1))
  end)

  it("index_select counts the slices it reads, not the whole table; index_add its adds", function()
    with_model("v100")
    local emb = torch.ones(1000, 64, { device = "cuda:0" })
    local idx = torch.tensor({ 1, 5, 7 }, { dtype = torch.int64, device = "cuda:0" })
    local p = torch.profiler.profile(function() local _ = emb:index_select(1, idx) end)
    local e = named(p, "index_select")[1]
    assert.are.equal(2 * 3 * 64 * 4 + 3 * 8, e.bytes) -- read and write 3 rows, read 3 indices
    local q = torch.profiler.profile(function() local _ = emb:cpu():index_select(1, idx:cpu()) end)
    assert.are.equal(e.bytes, named(q, "index_select")[1].bytes)
  end)
end)

describe("torch.cuda.explain", function()
  it("places each op on the V100's roofline and says why", function()
    with_model("v100")
    local A = torch.ones(2048, 2048, { device = "cuda:0" })
    local x = torch.ones(1 << 24, { device = "cuda:0" })
    local ex, v = torch.cuda.explain(function() local _ = A:matmul(A); _ = x:neg(); return 42 end)
    assert.are.equal(42, v)
    local mm, neg = ex.rows[1], ex.rows[2]
    assert.are.same({ "mm", "compute" }, { mm.name, mm.bound })
    assert.are.equal(2 * 2048 ^ 3 / (3 * 2048 * 2048 * 4), mm.intensity) -- 341.3
    assert.are.equal(PEAK / BW, mm.ridge)
    assert.are.equal(PEAK, mm.roof)
    assert.are.equal("neg", neg.name)
    assert.are.equal(0.125, neg.intensity) -- 1 FLOP per 8 bytes
    assert.are.equal(0.125 * BW, neg.roof) -- 112.5 GFLOP/s
    local text = tostring(ex)
    assert.truthy(text:find("compute-bound: 341 FLOP/byte, above the V100's ridge at 17.4 FLOP/byte", 1, true), text)
    assert.truthy(text:find("memory-bound: 0.125 FLOP/byte, below the V100's ridge at 17.4 FLOP/byte", 1, true), text)
    assert.truthy(text:find("cuda:0 is modelled on a Tesla V100-SXM2-16GB", 1, true), text)
    assert.truthy(text:find("\nneg%s+cuda:0%s+1%s+151%.1%d%dus%s+0%.125%s+[%d.]+ GFLOP/s%s+112 GFLOP/s%s+memory\n"), text)
    -- the picture: the roofs, each op a letter
    assert.truthy(text:find("arithmetic intensity (FLOP/byte)", 1, true) and text:find("\n  a mm: ", 1, true)
      and text:find("\n  b neg: ", 1, true), text)
    assert.truthy(ex.profile.models["cuda:0"])
  end)

  it("a copy and a launch-bound op are explained in their own words", function()
    with_model("v100")
    local h = torch.ones(1000)
    local ex = torch.cuda.explain(function() local g = h:cuda(0); local _ = g + 1 end)
    local text = tostring(ex)
    assert.truthy(text:find("copy_h2d on cuda:0: copy: 4 KB over PCIe 3 x16", 1, true), text)
    assert.truthy(text:find("add on cuda:0: launch-bound: ", 1, true), text)
    assert.truthy(text:find("pays the V100's 2.000us launch", 1, true), text)
  end)

  it("says nothing is modelled on host and on the CPU", function()
    local x = torch.ones(100)
    local cpu = tostring(torch.cuda.explain(function() local _ = x + 1 end))
    assert.truthy(cpu:find("torch.cuda.explain: nothing is modelled", 1, true), cpu)
    with_model("host")
    local g = torch.ones(100, { device = "cuda:0" })
    local ex = torch.cuda.explain(function() local _ = g + 1 end)
    assert.are.equal(0, #ex.rows)
    assert.truthy(tostring(ex):find("nothing is modelled", 1, true))
    -- and the profile is this machine's: no modelled events, the table as before
    local p = ex.profile
    assert.is_nil(p.models)
    for _, e in ipairs(p.events) do assert.is_nil(e.modelled) end
    local t = p:table()
    assert.is_nil(t:find("Peak%", 1, true), t)
    assert.truthy(t:find("GFLOP/s\n", 1, true), t)
  end)

  it("wants one function", function()
    assert.has_error(function() torch.cuda.explain(42) end, "torch.cuda.explain: expected a function to run, got number")
    assert.has_error(function() torch.cuda.explain(function() end, 1) end,
      "torch.cuda.explain: expected one function, got more arguments")
  end)

  it("%explain at the prompt prints the explanation and leaves it in _; %magic lists it", function()
    local out, err = R.prompt({ "x = torch.ones(1 << 20, {device = 'cuda:0'})", "%explain local y = x:neg()",
      "_.rows[1].name, _.rows[1].bound", "%explain", "%magic", "?%explain" }, { "--sim-gpus", "1" })
    assert.truthy(out:find("neg on cuda:0: memory-bound: 0.125 FLOP/byte", 1, true), out)
    assert.truthy(out:find("\nneg\tmemory\n", 1, true), out)
    assert.truthy((out .. err):find("usage: %explain statement", 1, true), out .. err)
    assert.truthy(out:find("%explain stmt", 1, true), out)
    assert.truthy(out:find("roofline picture", 1, true), out)
  end)
end)
