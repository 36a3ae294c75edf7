-- workers_spec.lua: worker sets (src/core/gs_parallel.h). Each simulated device
-- binds a set of its own on its own thread, so several sets must run jobs
-- at the same time without disturbing each other. torch._workers_selftest
-- (test-only, lua_workers.c) starts nsets threads, each bound to a fresh
-- set of threads_each threads, which repeat a 997-chunk parallel job and a
-- batched matrix product; the products are checked against a float64
-- reference computed afterwards.
local torch = require("torch")
local H = require("helpers")

local function check(nsets, each, reps, gemm)
  local r = torch._workers_selftest(nsets, each, reps, gemm)
  assert.is_true(r.chunks_ok, "every chunk of every job ran exactly once")
  assert.are.equal(nsets, #r.threads)
  for i = 1, nsets do assert.are.equal(each, r.threads[i]) end
  return r
end

describe("worker sets", function()
  it("gives the Lua thread the global set of all the host's cores", function()
    local r = check(1, 1, 1)
    assert.are.equal(r.host_cores, torch._num_threads())
    assert.is_true(r.host_cores >= 1)
  end)

  it("runs a one-thread set inline and a bigger set across its threads", function()
    check(1, 1, 50)
    check(1, 2, 50)
    check(1, 4, 50)
  end)

  it("runs jobs on several sets at the same time, each chunk exactly once", function()
    check(2, 1, 200)
    check(2, 2, 200)
    check(4, 3, 100)
  end)

  it("computes matrix products on concurrent sets (float32 and float64 against a float64 reference)", function()
    local r = check(3, 2, 3, { batch = 3, m = 67, k = 45, n = 131 })
    assert.is_true(r.gemm_error < 1e-4, "float32 error " .. r.gemm_error)
    r = check(2, 1, 3, { batch = 2, m = 257, k = 129, n = 63, dtype = "float64" })
    assert.is_true(r.gemm_error < 1e-11, "float64 error " .. r.gemm_error)
  end)

  it("refuses bad arguments with a message saying what was expected", function()
    H.errors(function() torch._workers_selftest(0, 1, 1) end, "expected 1 to 16 sets")
    H.errors(function() torch._workers_selftest(1, 0, 1) end, "expected 1 to 64 threads per set")
    H.errors(function() torch._workers_selftest(1, 1, 1, { batch = 1, m = 2, k = 2, n = 2, dtype = "int8" }) end,
      "dtype must be 'float32' or 'float64'")
  end)
end)
