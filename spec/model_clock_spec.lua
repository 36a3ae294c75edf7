-- The modelled clock (issue 29, docs/time-model.md "The modelled clock"):
-- simulated devices that model a GPU advance modelled time per task; the
-- host clock (torch.clock) jumps to a device's modelled end when it waits;
-- events read modelled time; with `host` nothing changes.
local torch = require("torch")
local H = require("helpers")

local T = torch.cuda._model_time

local function near(want, got, rel)
  rel = rel or 1e-6
  assert(math.abs(got - want) <= rel * math.abs(want),
    string.format("expected %.17g, got %.17g (relative %.3g)", want, got, (got - want) / want))
end

-- n simulated devices with model `spec` for the test, restored after (the
-- test's one `finally`: busted keeps only the last one given); the
-- collector is stopped for the test, so no pause of the host (real time)
-- comes between the calls it times
local function with_model(spec, n) H.with_model(finally, spec, n or 2, { stop_gc = true }) end

-- got is want, give or take the host's own time spent queuing (slack, in
-- the same unit): the device starts the timed work at the end of its
-- backlog or when the host queued it, whichever is later
local function within(want, got, slack)
  assert(got >= want * (1 - 1e-6) and got <= want * (1 + 1e-6) + slack, -- (stamps are seconds since boot)
    string.format("expected %.9g (+ at most %.3g of the host's queuing), got %.9g", want, slack, got))
end

-- keeps A's device busy for a while (modelled: 60 products of 1024, 12 ms
-- on a V100), so that what follows starts when the device gets to it,
-- not when the host queued it (unless the host is slower than that:
-- within() allows for it)
local function busy(A)
  for _ = 1, 60 do A:matmul(A) end
end

describe("the modelled clock", function()
  it("a kernel between two events takes its modelled time exactly (memory-bound: B / bandwidth + launch)", function()
    with_model("v100")
    local n = 1 << 24 -- 64 MiB of float32: beyond the V100's 6 MiB L2
    local x = torch.ones(n, { device = "cuda:0" })
    local A = torch.ones(1024, 1024, { device = "cuda:0" })
    local s, e = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
    busy(A)
    local h0 = torch.clock()
    s:record()
    local y = x:neg()
    e:record()
    local slack = torch.clock() - h0
    e:synchronize()
    -- neg reads and writes 4 bytes per element, one FLOP each
    local want = T("v100", "kernel", { bytes = 8 * n, flops = n, elems = n })
    near(8 * n / 900e9 + 2e-6, want, 1e-12)
    within(want * 1e3, s:elapsed_time(e), slack * 1e3)
    assert.are.equal(-1, y[1]:item())
  end)

  it("a product between two events takes the gemm formula's time", function()
    with_model("a100")
    local A = torch.ones(1024, 1024, { device = "cuda:0" })
    local B = torch.ones(512, 256, { device = "cuda:0" })
    local C = torch.ones(256, 384, { device = "cuda:0" })
    local s, e = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
    busy(A)
    local h0 = torch.clock()
    s:record()
    local D = B:matmul(C)
    e:record()
    local slack = torch.clock() - h0
    e:synchronize()
    within(T("a100", "gemm", { m = 512, n = 384, k = 256 }) * 1e3, s:elapsed_time(e), slack * 1e3)
    assert.are.equal(256, D[1][1]:item())
  end)

  it("the host clock reports modelled time while real time is far longer", function()
    with_model("h100")
    local A = torch.rand(1024, 1024, { device = "cuda:0" })
    torch.cuda.synchronize()
    local r0, t0 = torch._real_clock(), torch.clock()
    for _ = 1, 20 do A:matmul(A) end
    torch.cuda.synchronize()
    local modelled, real = torch.clock() - t0, torch._real_clock() - r0
    local one = T("h100", "gemm", { m = 1024, n = 1024, k = 1024 })
    -- 20 products back to back on the device, plus the host's own work
    -- (real time: on a loaded machine, slowed by the simulation's own
    -- computing on the same cores)
    assert.is_true(modelled >= 20 * one, modelled)
    assert.is_true(real > 10 * modelled, string.format("real %g, modelled %g", real, modelled))
  end)

  it("a copy from pageable memory waits for its PCIe time; pinned and non_blocking returns at once", function()
    with_model("v100")
    local n = 1 << 24
    local h = torch.ones(n)
    -- (upper bounds allow the host's own real work on a loaded machine)
    local t0 = torch.clock()
    local d = h:to("cuda:0")
    local dt = torch.clock() - t0
    local want = T("v100", "copy", { bytes = 4 * n }) -- pageable
    assert.is_true(dt >= want, string.format("%g < %g", dt, want))
    assert.is_true(dt < want + 0.05, dt)
    local p = h:pin_memory()
    torch.cuda.synchronize()
    local r0
    r0, t0 = torch._real_clock(), torch.clock()
    local d2 = p:to("cuda:0", { non_blocking = true })
    local queued, real = torch.clock() - t0, torch._real_clock() - r0
    torch.cuda.synchronize()
    local done = torch.clock() - t0
    local pinned = T("v100", "copy", { bytes = 4 * n, pinned = true })
    -- no jump: the host's own work (at most its real time: the time it
    -- waited for a core is taken out) and one launch, not the copy
    assert.is_true(queued <= real + 1e-4, queued - real)
    assert.is_true(done >= pinned and done < pinned + 0.05, done)
    near(want - 10e-6, 2 * (pinned - 10e-6), 1e-12)
    assert.are.equal(1, d[n]:item() * d2[1]:item())
  end)

  it("a copy and a kernel on two streams overlap (copy engines beside the SMs)", function()
    with_model("v100")
    local A = torch.ones(1024, 1024, { device = "cuda:0" })
    local h = torch.ones(1 << 21):pin_memory() -- 8 MiB: 0.7 ms, as long as 4 products
    local s = torch.cuda.Stream(0)
    local gemm = T("v100", "gemm", { m = 1024, n = 1024, k = 1024 })
    local copy = T("v100", "copy", { bytes = 4 << 21, pinned = true })
    local function ev() return torch.cuda.Event({ enable_timing = true }) end
    local e0, ek, ec = ev(), ev(), ev()
    -- both start when the device's backlog ends (e0), whenever the host queued them
    busy(A)
    local h0 = torch.clock()
    e0:record()
    for _ = 1, 4 do A:matmul(A) end
    ek:record()
    local d
    do
      local scope <close> = torch.cuda.stream(s)
      s:wait_event(e0)
      d = h:to("cuda:0", { non_blocking = true })
      ec:record()
    end
    local slack = (torch.clock() - h0) * 1e3
    torch.cuda.synchronize()
    within(4 * gemm * 1e3, e0:elapsed_time(ek), slack)
    within(copy * 1e3, e0:elapsed_time(ec), slack)
    -- together: the longer of the two, not their sum
    assert.is_true(math.max(e0:elapsed_time(ek), e0:elapsed_time(ec)) - slack < (4 * gemm + copy) * 1e3 * 0.75)
    -- two kernels on two streams share the SMs: one after the other
    local e1, ka, kb = ev(), ev(), ev()
    busy(A)
    h0 = torch.clock()
    e1:record()
    A:matmul(A)
    ka:record()
    do
      local scope <close> = torch.cuda.stream(s)
      s:wait_event(e1)
      A:matmul(A)
      kb:record()
    end
    slack = (torch.clock() - h0) * 1e3
    torch.cuda.synchronize()
    within(gemm * 1e3, e1:elapsed_time(ka), slack)
    -- the second starts when the first ends, not beside it
    within(2 * gemm * 1e3, e1:elapsed_time(kb), slack)
    assert.is_true(e1:elapsed_time(kb) - e1:elapsed_time(ka) >= gemm * 1e3 * (1 - 1e-6))
    assert.are.equal(1, d[1]:item())
  end)

  it("a loop of tiny ops is launch-bound: the host pays the driver per launch", function()
    with_model("v100")
    local x = torch.ones(4, { device = "cuda:0" })
    torch.cuda.synchronize()
    local t0 = torch.clock()
    for _ = 1, 200 do x:add_(1) end
    torch.cuda.synchronize()
    local dt = torch.clock() - t0
    local m = torch.cuda.gpu_model(0)
    assert.is_true(dt >= 200 * math.max(m.host_launch, m.launch), dt)
    assert.are.equal(201, x[1]:item())
  end)

  it("with host nothing is modelled: the clock is real time and events time the real work", function()
    with_model("host")
    assert.is_nil(torch.cuda.gpu_model(0))
    local A = torch.rand(512, 512, { device = "cuda:0" })
    torch.cuda.synchronize()
    local r0, t0 = torch._real_clock(), torch.clock()
    local s, e = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
    s:record()
    for _ = 1, 5 do A:matmul(A) end
    e:record()
    torch.cuda.synchronize()
    local modelled, real = torch.clock() - t0, torch._real_clock() - r0
    -- the two clocks advance together (read a moment apart)
    assert.is_true(math.abs(modelled - real) < 1e-3, modelled - real)
    assert.is_true(s:elapsed_time(e) <= real * 1e3)
    assert.is_true(s:elapsed_time(e) > 0)
  end)

  it("mixing models: each device keeps its own time", function()
    with_model("t4,h100")
    local a = torch.ones(1024, 1024, { device = "cuda:0" })
    local b = torch.ones(1024, 1024, { device = "cuda:1" })
    -- each device's own time for 4 products, from the end of a backlog
    -- (events: exact, whatever the host's real delays)
    local function timed(x, i)
      busy(x)
      local st = torch.cuda.current_stream(i)
      local s, e = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
      local h0 = torch.clock()
      s:record(st)
      for _ = 1, 4 do x:matmul(x) end
      e:record(st)
      local slack = torch.clock() - h0
      e:synchronize()
      return s:elapsed_time(e) / 1e3, slack
    end
    local t4, s4 = timed(a, 0)
    local h100, sh = timed(b, 1)
    within(4 * T("t4", "gemm", { m = 1024, n = 1024, k = 1024 }), t4, s4)
    within(4 * T("h100", "gemm", { m = 1024, n = 1024, k = 1024 }), h100, sh)
    -- 8.3x the FP32 peak, but 1024 x 1024 fills 64 tiles: 80% of a T4's two waves, 48% of an H100's one
    assert.is_true(T("t4", "gemm", { m = 1024, n = 1024, k = 1024 }) > 3 * T("h100", "gemm", { m = 1024, n = 1024, k = 1024 }))
  end)
end)
