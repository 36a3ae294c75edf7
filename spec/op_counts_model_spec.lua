-- Every op the engine runs has FLOP and byte counts on a modelled GPU
-- (issue 29, docs/profiling.md "FLOPs", docs/time-model.md): each op kind
-- (elementwise, reductions, softmax, products, random numbers, arange,
-- indexing, pooling, batch norm, convolutions, collectives) runs once on a
-- simulated V100 under the profiler, and its row's FLOPs and bytes are
-- checked against counts worked by hand for the small case. A convolution
-- is one implicit-GEMM row (cuDNN's kernel), timed by its formula, with no
-- im2col row; with `host` the engine's own kernels show.
local torch = require("torch")
local H = require("helpers")
local nn = torch.nn

local T = torch.cuda._model_time

local function with_model(spec, n) H.with_model(finally, spec, n or 2) end

-- the device events of fn (run once before, so nothing is first-use)
local function events(fn)
  fn()
  torch.cuda.synchronize()
  local p = torch.profiler.profile(function() fn(); torch.cuda.synchronize() end)
  local by = {}
  for _, e in ipairs(p.events) do
    if e.device ~= "cpu" and e.kind ~= "sync" then by[e.name] = by[e.name] or e end
  end
  return by, p
end

local function counts(e, bytes, flops, what)
  assert(e, what .. ": no row")
  assert.are.same({ bytes, flops }, { e.bytes, e.flops or 0 }, what)
  assert.is_true(e.modelled, what .. " is not modelled")
end

-- a modelled span: whole ns at both ends
local function span_is(e, seconds)
  local got = e.t1 - e.t0
  assert(math.abs(got - seconds * 1e9) <= 2, string.format("%s: expected %.1f ns, got %d", e.name, seconds * 1e9, got))
end

describe("FLOP and byte counts of each op kind on a modelled GPU", function()
  -- The engine computes a half-precision product in float32 (two casts,
  -- a float32 product, a cast back); a real GPU runs one fp16 or bf16
  -- tensor-core product, and that is what the model prices: one "mm" row
  -- on the half unit, the gemm formula's time, the half operands' bytes.
  it("a float16 or bfloat16 product is one tensor-core product, not casts around a float32 one", function()
    with_model("h100")
    for _, case in ipairs({ { "float16", torch.float16, "fp16_tc" }, { "bfloat16", torch.bfloat16, "bf16_tc" } }) do
      local a = torch.ones(64, 32, { device = "cuda:0" }):to(case[2])
      local b = torch.ones(32, 16, { device = "cuda:0" }):to(case[2])
      local by, p = events(function() return a:mm(b) end)
      local rows = 0
      for _, e in ipairs(p.events) do
        if e.lane == "cuda:0/0" then rows = rows + 1 end
      end
      assert.are.equal(1, rows, case[1] .. ": the casts take no row of their own")
      counts(by.mm, 2 * (64 * 32 + 32 * 16 + 64 * 16), 2 * 64 * 16 * 32, case[1] .. " mm")
      assert.are.equal(case[3], by.mm.unit, case[1] .. " mm's unit")
      span_is(by.mm, T("h100", "gemm", { m = 64, n = 16, k = 32, dtype = case[1] }))
    end
    -- and the result is still the float32 product's, rounded once
    local a = torch.ones(64, 32, { device = "cuda:0" }):to(torch.float16)
    assert.are.equal(32, a:mm(torch.ones(32, 16, { device = "cuda:0" }):to(torch.float16)):float():max():item())
  end)

  -- x: 4 x 8 float32 = 32 elements, 128 bytes
  it("elementwise, reductions, softmax and products", function()
    with_model("v100")
    local x = torch.ones(4, 8, { device = "cuda:0" })
    counts(events(function() return x:exp() end).exp, 256, 32, "exp: reads and writes 128 bytes, one FLOP each")
    counts(events(function() return x + x end).add, 384, 32, "add: two operands and the result")
    counts(events(function() return x:sum(2) end).sum, 144, 32, "sum(2): 128 read, 4 sums written, one add per element")
    counts(events(function() return torch.softmax(x, 2) end).softmax, 256, 160, "softmax: five FLOPs an element")
    counts(events(function() return x:mm(x:t()) end).mm, 320, 256, "[4, 8] @ [8, 4]: 2 x 4 x 4 x 8, (32 + 32 + 16) x 4 bytes")
  end)

  it("random numbers and arange", function()
    with_model("v100")
    local d = "cuda:0"
    counts(events(function() return torch.rand(4, 8, { device = d }) end).uniform_, 128, 32, "rand: one FLOP a number")
    counts(events(function() return torch.randn(4, 8, { device = d }) end).normal_, 128, 128, "randn: four (Box-Muller)")
    counts(events(function() return torch.arange(32, { device = d }) end).arange, 256, 64, "arange: 32 int64, start + i x step")
  end)

  it("indexing: index_select reads the slices it selects, index_add_ adds", function()
    with_model("v100")
    local x = torch.ones(4, 8, { device = "cuda:0" })
    local idx = torch.tensor({ 1, 3 }, { device = "cuda:0" })
    -- rows 1 and 3: 2 x 8 floats read and written, plus two int64 indices
    counts(events(function() return x:index_select(1, idx) end).index_select, 2 * 64 + 16, 0, "index_select")
    -- index_select's gradient adds the output's gradient (2 x 8) into the
    -- rows it came from: reads it, reads and writes those rows, the
    -- indices; an add per element
    local xg = torch.ones(4, 8, { device = "cuda:0" }):requires_grad_()
    local gy = torch.ones(2, 8, { device = "cuda:0" })
    local by = events(function() xg.grad = nil; xg:index_select(1, idx):backward(gy) end)
    counts(by.index_add_, 3 * 64 + 16, 16, "index_add_")
  end)

  -- img: 2 x 3 x 8 x 8 float32 = 384 elements, 1536 bytes
  it("pooling and batch norm", function()
    with_model("v100")
    local img = torch.ones(2, 3, 8, 8, { device = "cuda:0" })
    -- out 2 x 3 x 4 x 4 = 96 floats (384 bytes), and for max the int64 argmax (768): one compare per input
    counts(events(function() return nn.functional.max_pool2d(img, 2) end).max_pool2d, 1536 + 384 + 768, 384, "max_pool2d")
    counts(events(function() return nn.functional.avg_pool2d(img, 2) end).avg_pool2d, 1536 + 384, 384, "avg_pool2d")
    local bn = nn.BatchNorm2d(3):to("cuda:0")
    -- reads x, writes [2, 3] statistics (24 bytes): 3 FLOPs an element (sum, square, add)
    counts(events(function() return bn(img) end).batch_norm_stats, 1536 + 24, 3 * 384, "batch_norm_stats")
  end)

  it("a convolution is one implicit-GEMM kernel, forward and backward, timed by its formula", function()
    with_model("v100")
    -- x [2, 3, 8, 8], w [4, 3, 3, 3] -> y [2, 4, 6, 6]: M = 4 outputs, N = 2 x 36
    -- pixels, K = 3 x 9; bytes: x 384 + w 108 + y 288 floats
    local x = torch.ones(2, 3, 8, 8, { device = "cuda:0" }):requires_grad_()
    local w = torch.ones(4, 3, 3, 3, { device = "cuda:0" }):requires_grad_()
    local io = (384 + 108 + 288) * 4
    local by = events(function() return torch.conv2d(x:detach(), w:detach()) end)
    counts(by.conv2d, io, 2 * 4 * 72 * 27, "conv2d")
    span_is(by.conv2d, T("v100", "conv", { m = 4, n = 72, k = 27, bytes = io }))
    assert.is_nil(by.im2col, "im2col is part of the implicit GEMM")
    assert.is_nil(by.mm, "the product is part of the implicit GEMM")
    -- backward: the data gradient [27, 4] x [4, 72] and the weight gradient
    -- [4, 72] x [72, 27], each reading and writing the three tensors once
    local g = torch.ones(2, 4, 6, 6, { device = "cuda:0" })
    local bw = events(function() x.grad, w.grad = nil, nil; torch.conv2d(x, w):backward(g) end)
    counts(bw.conv2d_backward, 2 * io, 2 * 2 * 4 * 72 * 27, "conv2d_backward")
    span_is(bw.conv2d_backward, T("v100", "conv", { m = 27, n = 72, k = 4, bytes = io })
      + T("v100", "conv", { m = 4, n = 27, k = 72, bytes = io }))
    assert.is_nil(bw.col2im, "col2im is part of the data gradient's kernel")
  end)

  it("torch.cuda.explain says why a compute-bound convolution stays below the peak", function()
    with_model("v100")
    -- 8 x 64 x 28 x 28 through 64 3x3 filters: 462 MFLOPs on 49 output
    -- tiles (fewer than the 80 SMs), 3.4 MB: compute-bound
    local x = torch.ones(8, 64, 28, 28, { device = "cuda:0" })
    local w = torch.ones(64, 64, 3, 3, { device = "cuda:0" })
    local ex = torch.cuda.explain(function() local _ = torch.conv2d(x, w, nil, { padding = 1 }) end)
    assert.are.same({ "conv2d", "compute" }, { ex.rows[1].name, ex.rows[1].bound })
    local text = tostring(ex)
    assert.truthy(text:find("a convolution (cuDNN's implicit GEMM) reaches at most 75% of it", 1, true), text)
  end)

  it("with host the engine's own kernels show (im2col and the product)", function()
    with_model("host")
    local x = torch.ones(2, 3, 8, 8, { device = "cuda:0" })
    local w = torch.ones(4, 3, 3, 3, { device = "cuda:0" })
    local by = events(function() return torch.conv2d(x, w) end)
    assert.truthy(by.im2col and by.mm, "im2col and mm rows")
    assert.is_nil(by.conv2d)
  end)

  it("collectives: copies between the GPUs over NVLink, and their adds", function()
    with_model("v100")
    local x = torch.ones(4, 8, { device = "cuda:0" })
    local b = events(function() return torch.cuda.comm.broadcast(x, { 0, 1 }) end)
    counts(b.copy_d2d, 128, 0, "broadcast: 128 bytes to cuda:1")
    span_is(b.copy_d2d, T("v100", "copy", { bytes = 128, to = "v100" }))
    local x1 = torch.ones(4, 8, { device = "cuda:1" })
    local r = events(function() return torch.cuda.comm.reduce_add({ x, x1 }, 0) end)
    counts(r.add, 384, 32, "reduce_add's sum on cuda:0")
  end)
end)
