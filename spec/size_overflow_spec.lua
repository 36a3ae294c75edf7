-- size_overflow_spec.lua: sizes computed from huge user numbers (issue
-- 33). Convolution sizes from a padding or dilation near 2^63 are checked
-- (they wrapped into a small, wrong output), and a product wider than
-- BLAS's 32-bit sizes is cut into calls that fit (it came back as
-- garbage with one OpenBLAS line on stderr). A test-only hook,
-- torch._blas_limit(n), lowers the most one BLAS call may be given, so
-- the cutting is checked at small sizes: each result against the same
-- product in one call (float64, checked against PyTorch elsewhere) and a
-- hand-worked value.
local torch = require("torch")
local H = require("helpers")
local F = torch.nn.functional

setup(function() H.gpus(1) end)
teardown(function()
  torch._blas_limit()
  H.release_gpus()
end)

local function devices()
  local d = { "cpu" }
  if torch.cuda.device_count() > 0 and H.gpus_simulated() then d[2] = "cuda:0" end
  return d
end

describe("convolution sizes from huge numbers", function()
  for _, dev in ipairs(devices()) do
    it("padding or dilation near 2^63 is an error naming the overflow, on " .. dev, function()
      local x, w = torch.randn(2, 3, 8, 8):to(dev), torch.randn(4, 3, 3, 3):to(dev)
      for _, o in ipairs({ { dilation = math.maxinteger }, { padding = math.maxinteger },
        { dilation = 1 << 62, padding = 1 << 62 }, { padding = "same", dilation = 1 << 62 } }) do
        H.errors(function() F.conv2d(x, w, nil, o) end, { "conv2d: the sizes overflow", "must fit in 64 bits" })
      end
      H.errors(function() F.conv1d(torch.randn(1, 1, 4):to(dev), torch.randn(1, 1, 3):to(dev), nil,
        { dilation = math.maxinteger }) end, { "conv1d: the sizes overflow" })
      -- an output too large to count
      H.errors(function() F.conv2d(x, w, nil, { padding = 1 << 40 }) end, { "too large to index in 64 bits" })
    end)

    it("a stride near 2^63 over a huge padding gives PyTorch's one output of padding, on " .. dev, function()
      local x, w = torch.randn(2, 3, 8, 8):to(dev), torch.randn(4, 3, 3, 3):to(dev)
      local y = F.conv2d(x, w, torch.full({ 4 }, 0.5):to(dev), { stride = math.maxinteger, padding = 1 << 61 })
      assert.are.equal("torch.Size([2, 4, 1, 1])", tostring(y.shape))
      assert.are.same({ 0.5, 0.5, 0.5, 0.5 }, y[2]:reshape(-1):tolist())
    end)
  end

  it("interpolate with a scale past 2^63 names the size instead of Lua's conversion error", function()
    H.errors(function() F.interpolate(torch.randn(1, 1, 4, 4), { scale_factor = 1e300 }) end,
      { "interpolate: scale_factor 1e+300 makes an output size of", "too large" })
  end)
end)

describe("products cut to BLAS's 32-bit sizes", function()
  after_each(function() torch._blas_limit() end)

  local function max_diff(a, b) return (a:to("cpu"):to(torch.float64) - b:to("cpu"):to(torch.float64)):abs():max():item() end

  it("conv1d: the issue's product, 3 * 2 + 0.5, at a limit of one", function()
    torch._blas_limit(1)
    local y = F.conv1d(torch.full({ 1, 1, 1 }, 3.0), torch.full({ 1, 1, 1 }, 2.0), torch.full({ 1 }, 0.5), { padding = 1 })
    assert.are.same({ 0.5, 6.5, 0.5 }, y:reshape(-1):tolist())
  end)

  -- (not under TSAN: its spec interpreter links OpenBLAS itself, so
  -- OpenBLAS's own xerbla_ is found before torch.so's; gshell and stock
  -- lua5.4 do not)
  H.not_under_tsan_it(it, pending, "the TSAN lua5.4 links OpenBLAS")("a refused BLAS call is noticed, not ignored", function()
    assert.is_true(torch._blas_refusal_selftest() > 0)
  end)

  for _, dev in ipairs(devices()) do
    for _, dt in ipairs({ "float32", "float64" }) do
      it("matmul, bmm, linear, conv1d, conv2d and conv2d's gradients match one call, " .. dt .. " on " .. dev, function()
        local opts = { dtype = torch[dt] }
        local tol = dt == "float32" and 1e-5 or 1e-12
        torch.manual_seed(33)
        local a, b = torch.randn(37, 29, opts), torch.randn(29, 41, opts)
        local ba, bb = torch.randn(3, 9, 13, opts), torch.randn(3, 13, 10, opts)
        local lx, lw, lb = torch.randn(5, 19, opts), torch.randn(23, 19, opts), torch.randn(23, opts)
        local cx, cw = torch.randn(2, 3, 9, 11, opts), torch.randn(4, 3, 3, 2, opts)
        local c1x, c1w = torch.randn(2, 3, 17, opts), torch.randn(5, 3, 4, opts)
        local function run()
          local r = {}
          local A, B = a:to(dev), b:to(dev)
          r[1] = A:matmul(B)
          r[2] = A:t():contiguous():t():matmul(B) -- a read transposed
          r[3] = A:matmul(B:t():contiguous():t()) -- b read transposed
          r[4] = A[{ {}, { 1, 20 } }]:matmul(B[{ { 1, 20 }, {} }]) -- leading dimensions wider than the rows
          r[5] = torch.bmm(ba:to(dev), bb:to(dev))
          r[6] = F.linear(lx:to(dev), lw:to(dev), lb:to(dev))
          r[7] = F.conv1d(c1x:to(dev), c1w:to(dev), nil, { padding = 2, dilation = 2 })
          r[8] = F.conv2d(cx:to(dev), cw:to(dev), nil, { padding = 1, stride = { 2, 1 } })
          local x, w = cx:to(dev):requires_grad_(), cw:to(dev):requires_grad_()
          F.conv2d(x, w, nil, { padding = 1 }):sum():backward()
          r[9], r[10] = x.grad, w.grad
          return r
        end
        local ref = run()
        for _, lim in ipairs({ 1, 2, 7, 16 }) do
          torch._blas_limit(lim)
          local got = run()
          for k = 1, #ref do
            local d = max_diff(got[k], ref[k])
            assert(d <= tol, string.format("limit %d, result %d: differs by %g", lim, k, d))
          end
          torch._blas_limit()
        end
      end)
    end
  end
end)
