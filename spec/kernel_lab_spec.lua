-- The kernel lab (issue 30, docs/kernel-lab.md): Lua kernels on simulated
-- GPUs, their values, exact counts, modelled time, and every error naming
-- block and thread. (spec/kernel_spec.lua is the Jupyter kernel's.)
local torch = require("torch")
local H = require("helpers")

-- n simulated devices modelling `spec` for the test, restored after
local function with_model(spec, n) H.with_model(finally, spec, n or 1) end

local function near(want, got, rel)
  assert(math.abs(got - want) <= (rel or 1e-9) * math.abs(want), string.format("expected %.12g, got %.12g", want, got))
end

local add = torch.cuda.kernel(function(out, a, b, n)
  local i = blockIdx.x * blockDim.x + threadIdx.x
  if i < n then out[i] = a[i] + b[i] end
end, { name = "add" })

describe("kernel lab: values and counts", function()
  it("vector add of n: the sums, 2n global reads, n writes, 3n*4/32 sectors", function()
    with_model("v100")
    local a = torch.rand(1000):cuda()
    local b = torch.rand(1000):cuda()
    local out = torch.zeros(1000):cuda()
    local r = add:launch(4, 256, out, a, b, 1000)
    assert.are.equal(0, (out - (a + b)):abs():max():item()) -- float32 sums, rounded once as CUDA's
    assert.are.equal(2000, r.global_reads)
    assert.are.equal(1000, r.global_writes)
    assert.are.equal(375, r.sectors) -- three arrays of 4000 bytes, 125 sectors each
    assert.are.equal(0, r.shared_reads + r.shared_writes + r.bank_conflicts)
    assert.are.equal(1024, r.threads)
    assert.matches("global_reads%s+2000", tostring(r))
  end)

  it("a stride-2 read touches twice the sectors of a coalesced one", function()
    with_model("v100")
    local gather = torch.cuda.kernel(function(out, x, s)
      local i = blockIdx.x * blockDim.x + threadIdx.x
      out[i] = x[i * s]
    end)
    local x = torch.arange(2048, { dtype = torch.float32 }):cuda()
    local out = torch.zeros(1024):cuda()
    local r1 = gather:launch(4, 256, out, x, 1)
    local r2 = gather:launch(4, 256, out, x, 2)
    assert.are.equal(128 + 128, r1.sectors) -- 4096 bytes read + 4096 written
    assert.are.equal(256 + 128, r2.sectors) -- the read spans 8192 bytes
    assert.are.equal(2046, out[1024]:item())
  end)

  it("grid and block as {x, y, z}: every thread sees its own indices", function()
    with_model("v100")
    local ids = torch.cuda.kernel(function(out)
      local tx, ty, tz = threadIdx.x, threadIdx.y, threadIdx.z
      local bx, by = blockIdx.x, blockIdx.y
      local t = tx + blockDim.x * (ty + blockDim.y * tz)
      local b = bx + gridDim.x * by
      out[b * blockDim.x * blockDim.y * blockDim.z + t] = 1000 * b + 100 * tz + 10 * ty + tx
    end)
    local out = torch.zeros(2 * 3 * 24, { dtype = torch.int64 }):cuda()
    ids:launch({ 2, 3 }, { 4, 3, 2 }, out)
    local want = {}
    for b = 0, 5 do
      for tz = 0, 1 do for ty = 0, 2 do for tx = 0, 3 do want[#want + 1] = 1000 * b + 100 * tz + 10 * ty + tx end end end
    end
    assert.are.same(want, out:tolist())
  end)

  it("a shared-memory reduction with syncthreads: the sum and its exact counts", function()
    with_model("v100")
    local red = torch.cuda.kernel(function(out, x, n)
      local s = shared(256)
      local t = threadIdx.x
      local i = blockIdx.x * blockDim.x + t
      s[t] = i < n and x[i] or 0
      syncthreads()
      local h = blockDim.x // 2
      while h > 0 do
        if t < h then s[t] = s[t] + s[t + h] end
        syncthreads()
        h = h // 2
      end
      if t == 0 then atomic_add(out, 0, s[0]) end
    end)
    local x = torch.arange(1000, { dtype = torch.float64 }):cuda()
    local out = torch.zeros(1, { dtype = torch.float64 }):cuda()
    local r = red:launch(4, 256, out, x, 1000)
    assert.are.equal(999 * 1000 / 2, out:item())
    assert.are.equal(4 * (256 + 255), r.shared_writes)
    assert.are.equal(4 * (2 * 255 + 1), r.shared_reads)
    assert.are.equal(4, r.atomics)
    assert.are.equal(1000 + 4, r.global_reads) -- the atomics read and write out
  end)

  it("bank conflicts: the max of distinct words in one bank, minus 1, per warp access", function()
    with_model("v100")
    local banks = torch.cuda.kernel(function(out, stride)
      local s = shared(1024)
      local t = threadIdx.x
      s[t * stride] = t
      syncthreads()
      out[t] = s[t * stride]
    end)
    local out = torch.zeros(32):cuda()
    assert.are.equal(0, banks:launch(1, 32, out, 1).bank_conflicts)
    assert.are.equal(2 * 1, banks:launch(1, 32, out, 2).bank_conflicts)  -- 2 words per even bank
    assert.are.equal(2 * 31, banks:launch(1, 32, out, 32).bank_conflicts) -- all 32 in bank 0
    assert.are.equal(31, out[32]:item())
    local bcast = torch.cuda.kernel(function(out)
      local s = shared(1)
      if threadIdx.x == 0 then s[0] = 7 end
      syncthreads()
      out[threadIdx.x] = s[0] -- one word read by all: a broadcast, no conflict
    end)
    assert.are.equal(0, bcast:launch(1, 32, out).bank_conflicts)
    assert.are.equal(7, out[1]:item())
  end)

  it("integer tensors are written back exactly; float32 stores round as float32", function()
    with_model("v100")
    local k = torch.cuda.kernel(function(o64, o32, f)
      local t = threadIdx.x
      o64[t] = 9007199254740993 + t -- 2^53 + 1 + t: not a double
      o32[t] = t == 0 and 7.9 or 2147483648 -- truncated toward zero, as C converts; wraps to int32
      o32[t] = o32[t] + 0
      f[t] = 0.1
      f[t + 2] = f[t] == 0.1 and 1 or 0 -- the stored value is the float32 0.1
    end)
    local o64 = torch.zeros(2, { dtype = torch.int64 }):cuda()
    local o32 = torch.zeros(2, { dtype = torch.int32 }):cuda()
    local f = torch.zeros(4):cuda()
    k:launch(1, 2, o64, o32, f)
    assert.are.same({ 9007199254740993, 9007199254740994 }, o64:tolist())
    assert.are.same({ 7, -2147483648 }, o32:tolist())
    assert.are.equal(0, f[3]:item())
  end)

  it("naive and tiled matmul give A B; the tile reads global memory 16 times less", function()
    with_model("v100")
    local n = 32
    local A, B = torch.rand(n, n):cuda(), torch.rand(n, n):cuda()
    local naive = torch.cuda.kernel(function(c, a, b, n)
      local row = blockIdx.y * blockDim.y + threadIdx.y
      local col = blockIdx.x * blockDim.x + threadIdx.x
      local acc = 0
      for k = 0, n - 1 do acc = acc + a[row * n + k] * b[k * n + col] end
      c[row * n + col] = acc
    end)
    local T = 16
    local tiled = torch.cuda.kernel(function(c, a, b, n)
      local ta, tb = shared(T * T), shared(T * T)
      local tx, ty = threadIdx.x, threadIdx.y
      local row, col = blockIdx.y * T + ty, blockIdx.x * T + tx
      local acc = 0
      for p = 0, n // T - 1 do
        ta[ty * T + tx] = a[row * n + p * T + tx]
        tb[ty * T + tx] = b[(p * T + ty) * n + col]
        syncthreads()
        for k = 0, T - 1 do acc = acc + ta[ty * T + k] * tb[k * T + tx] end
        syncthreads()
      end
      c[row * n + col] = acc
    end)
    local C1, C2 = torch.zeros(n, n):cuda(), torch.zeros(n, n):cuda()
    local r1 = naive:launch({ 2, 2 }, { 16, 16 }, C1, A, B, n)
    local r2 = tiled:launch({ 2, 2 }, { 16, 16 }, C2, A, B, n)
    local ref = A:matmul(B)
    assert.is_true((C1 - ref):abs():max():item() < 1e-5)
    assert.is_true((C2 - ref):abs():max():item() < 1e-5)
    assert.are.equal(2 * n ^ 3, r1.global_reads)
    assert.are.equal(2 * n ^ 3 / 16, r2.global_reads)
    assert.are.equal(2 * n ^ 3, r2.shared_reads)
    assert.are.equal(0, r2.bank_conflicts)
    assert.are.equal(2 * 256 * 4, r2.shared_bytes) -- two tiles of 256 float32 per block
  end)
end)

describe("kernel lab: time", function()
  it("time = launch + max(compute, memory) on the device's model; the stream, events and profiler see it", function()
    with_model("v100")
    local m = torch.cuda.gpu_model(0)
    local a, b, out = torch.rand(1000):cuda(), torch.rand(1000):cuda(), torch.zeros(1000):cuda()
    local e0, e1 = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
    e0:record()
    local r
    r = add:launch(4, 256, out, a, b, 1000)
    e1:record()
    e1:synchronize()
    local prof = torch.profiler.profile(function() add:launch(4, 256, out, a, b, 1000) end)
    near(375 * 32 / (m.bandwidth * 2), r.memory_ms / 1e3) -- 12 KB: inside L2
    near((m.launch + math.max(r.memory_ms, r.compute_ms) / 1e3) * 1e3, r.time_ms)
    assert.are.equal("launch", r.bound)
    -- the events hold the kernel's modelled time, and the host's own (real)
    -- time spent before queuing it: no more than that
    local ms = e0:elapsed_time(e1)
    assert.is_true(ms >= r.time_ms * (1 - 1e-6) and ms < r.time_ms + 100, tostring(ms))
    local ev
    for _, e in ipairs(prof.events) do if e.name == "kernel:add" then ev = e end end
    assert.is_truthy(ev, "the profiler recorded kernel:add")
    assert.is_true(ev.modelled)
    assert.are.equal("launch", ev.bound)
    near(r.time_ms * 1e6, ev.t1 - ev.t0, 1e-3) -- ns, rounded
    assert.are.equal(1, r.occupancy)
    assert.are.equal("threads", r.occupancy_limit)
  end)

  it("a copy of 2^18 floats on a T4 is memory-bound", function()
    with_model("t4")
    local m = torch.cuda.gpu_model(0)
    local n = 1 << 18 -- 2 MiB moved, inside the T4's 4 MB L2: 3.3 us against its 2 us launch
    local x, y = torch.rand(n):cuda(), torch.zeros(n):cuda()
    local copy = torch.cuda.kernel(function(o, i) local k = blockIdx.x * blockDim.x + threadIdx.x; o[k] = i[k] end)
    local r2 = copy:launch(n // 256, 256, y, x)
    assert.are.equal("memory", r2.bound)
    near(2 * n * 4 / (m.bandwidth * 2), r2.memory_ms / 1e3)
  end)

  it("occupancy: shared memory per block limits the blocks per SM", function()
    with_model("v100")
    local big = torch.cuda.kernel(function(o)
      local s = shared(8192) -- 32 KiB per block: 3 blocks in the V100's 96 KiB
      s[threadIdx.x] = 1
      o[threadIdx.x] = s[threadIdx.x]
    end)
    local r = big:launch(1, 64, torch.zeros(64):cuda())
    assert.are.equal(3, r.blocks_per_sm)
    assert.are.equal("shared memory", r.occupancy_limit)
    near(3 * 2 / 64, r.occupancy)
  end)

  it("a device without a model ('host'): counts, no time", function()
    with_model("host")
    local a, b, out = torch.rand(10):cuda(), torch.rand(10):cuda(), torch.zeros(10):cuda()
    local r = add:launch(1, 32, out, a, b, 10)
    assert.are.equal(20, r.global_reads)
    assert.is_nil(r.time_ms)
    assert.matches("no time", tostring(r), nil, true)
  end)
end)

describe("kernel lab: errors name block and thread", function()
  it("an out-of-bounds index, and the output is left unchanged", function()
    with_model("v100")
    local a = torch.rand(1000):cuda()
    local out = torch.zeros(2000):cuda()
    local copy = torch.cuda.kernel(function(out, a)
      local i = blockIdx.x * blockDim.x + threadIdx.x
      out[i] = a[i]
    end)
    H.errors(function() copy:launch(2, 963, out, a) end,
      "kernel error in block (1,0,0), thread (37,0,0): ")
    H.errors(function() copy:launch(2, 963, out, a) end,
      "index 1000 is out of bounds for argument 2 (a, 1000 elements; kernels index from 0)")
    assert.are.equal(0, out:abs():sum():item())
    H.errors(function() copy:launch(1, 1, out, torch.zeros(0):cuda()) end, "index 0 is out of bounds")
    local neg = torch.cuda.kernel(function(o) o[threadIdx.x - 1] = 1 end)
    H.errors(function() neg:launch(1, 4, out) end, "thread (0,0,0): ")
    local str = torch.cuda.kernel(function(o) return o.x end)
    H.errors(function() str:launch(1, 1, out) end, "is an array: index it with an integer from 0")
  end)

  it("a race on shared memory between two barriers", function()
    with_model("v100")
    local racy = torch.cuda.kernel(function(o)
      local s = shared(64)
      local t = threadIdx.x
      s[t] = t
      o[t] = s[(t + 1) % 64] -- thread t reads what thread t+1 writes, with no barrier between
    end)
    local out = torch.zeros(64):cuda()
    H.errors(function() racy:launch(1, 64, out) end, { "kernel error in block (0,0,0), thread (0,0,0)",
      "shared memory never written", "missing syncthreads()" })
    local racy2 = torch.cuda.kernel(function(o)
      local s = shared(64)
      local t = threadIdx.x
      s[t] = t
      syncthreads()
      local v = s[(t + 1) % 64]
      s[t] = v -- thread 1 overwrites what thread 0 read
      o[t] = v
    end)
    H.errors(function() racy2:launch(1, 64, out) end, { "thread (1,0,0)", "race on shared memory: element 1",
      "read by thread (0,0,0)" })
    local ww = torch.cuda.kernel(function(o)
      local s = shared(1)
      s[0] = threadIdx.x
      o[threadIdx.x] = 0
    end)
    H.errors(function() ww:launch(1, 2, out) end, { "thread (1,0,0)", "written by thread (0,0,0)" })
    assert.are.equal(0, out:abs():sum():item())
  end)

  it("shared(): over the model's shared memory per block, or declared differently by two threads", function()
    with_model("v100")
    local out = torch.zeros(4):cuda()
    local big = torch.cuda.kernel(function(o) local s = shared(30000); o[0] = 0 end)
    H.errors(function() big:launch(1, 1, out) end,
      { "thread (0,0,0)", "shared memory of a block is 120000 bytes, over the V100's 98304 per block" })
    local odd = torch.cuda.kernel(function(o) local s = shared(threadIdx.x == 0 and 4 or 8); o[threadIdx.x] = 0 end)
    H.errors(function() odd:launch(1, 2, out) end,
      { "thread (1,0,0)", "shared() call 1 asks for 8 float32 elements, but another thread of the block made it with 4" })
    local bad = torch.cuda.kernel(function(o) local s = shared(4, "complex"); o[0] = 0 end)
    H.errors(function() bad:launch(1, 1, out) end, "unknown dtype 'complex'")
    local f64 = torch.cuda.kernel(function(o)
      local s = shared(2, torch.float64)
      s[threadIdx.x] = 0.1
      syncthreads()
      o[threadIdx.x] = s[threadIdx.x] == 0.1 and 1 or 0 -- a float64 array keeps 0.1 exactly
    end)
    f64:launch(1, 2, out)
    assert.are.same({ 1, 1, 0, 0 }, out:tolist())
  end)

  it("a barrier not reached by every thread of the block", function()
    with_model("v100")
    local k = torch.cuda.kernel(function(o)
      if threadIdx.x < 16 then syncthreads() end
      o[threadIdx.x] = 1
    end)
    H.errors(function() k:launch(2, 32, torch.zeros(64):cuda()) end,
      "kernel error in block (0,0,0): thread (0,0,0) waits at syncthreads() but thread (16,0,0) finished")
  end)

  it("arguments: another device, cpu tensors, other values; bad grid and block", function()
    with_model("v100", 2)
    local a0, a1 = torch.zeros(4):cuda(0), torch.zeros(4):cuda(1)
    H.errors(function() add:launch(1, 4, a0, a1, a0, 4) end,
      "argument 2 (a) is on cuda:1, but the kernel runs on cuda:0")
    H.errors(function() add:launch(1, 4, torch.zeros(4), a0, a0, 4) end,
      "argument 1 (out): kernels run on cuda devices; this tensor is on cpu")
    H.errors(function() add:launch(1, 4, a0, a0, "x", 4) end,
      "argument 3 (b) is a string: kernels take tensors (arrays) and numbers (scalars)")
    H.errors(function() add:launch(1, 1025, a0, a0, a0, 4) end, "1025 threads is over the limit (1024 threads per block")
    H.errors(function() add:launch(0, 4, a0, a0, a0, 4) end, "grid.x must be a positive integer, got 0")
    H.errors(function() add:launch({ 1, 2.5 }, 4, a0, a0, a0, 4) end, "grid.y must be a positive integer")
    H.errors(function() add:launch(1, 4, 4) end, "at least one tensor argument")
    H.errors(function() torch.cuda.kernel(print) end, "expected a Lua function")
    local g = torch.cuda.kernel(function(o) leak = 1 end)
    H.errors(function() g:launch(1, 1, a0) end, "assignment to global 'leak' inside a kernel")
    H.errors(function() add:launch(1, 4, a0:expand(2, 4):t(), a0, a0, 4) end, "not contiguous")
  end)
end)

describe("kernel lab: Ctrl-C", function()
  it("stops a long launch between blocks with 'interrupted!' and writes nothing back", function()
    with_model("v100")
    local n = 1 << 16
    local a, b, out = torch.rand(n):cuda(), torch.rand(n):cuda(), torch.zeros(n):cuda()
    torch._interrupt_in(0)
    H.errors(function() add:launch(n // 256, 256, out, a, b, n) end, "interrupted!")
    assert.is_false(torch._interrupt_pending())
    assert.are.equal(0, out:abs():sum():item())
  end)
end)

describe("kernel lab: speed", function()
  local plain_it = H.plain_it(it, pending, "times Lua code; the sanitizers only slow it")
  plain_it("a 1-million-thread elementwise kernel runs in seconds", function()
    with_model("v100")
    local n = 1 << 20
    local a, b, out = torch.rand(n):cuda(), torch.rand(n):cuda(), torch.zeros(n):cuda()
    local t0 = torch._real_clock()
    add:launch(n // 256, 256, out, a, b, n)
    local s = torch._real_clock() - t0
    assert.is_true(s < 10, "took " .. s .. " s")
    assert.are.equal(0, (out - (a + b)):abs():max():item())
  end)
end)
