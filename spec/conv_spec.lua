-- Convolution: torch.conv2d / torch.conv1d (nn.functional's conv2d and
-- conv1d) against PyTorch's numbers (spec/support/conv_goldens.lua, from
-- spec/support/gen_conv_goldens.py): the output and the gradients of the
-- input, weight and bias over a grid of shapes and options, in float32 and
-- float64, on the cpu and on a simulated GPU, with the batch in one chunk
-- and in many; float64 gradchecks; PyTorch's error messages.
local torch = require("torch")
local H = require("helpers")
local GOLD = require("conv_goldens")
local F = require("torch.nn.functional_conv")

local CC = require("conv_check")
local fill, dims, expect_close = CC.fill, CC.dims, CC.expect_close

local TOL = { [torch.float32] = 2e-5, [torch.float64] = 1e-10 }

-- Runs golden case c on dev in dtype dt and checks all four results.
local function run_case(c, dev, dt)
  local x = fill(c.x, 7919, 3 + c.k, 211, dt):to(dev):requires_grad_()
  local w = fill(c.w, 4391, 5 + c.k, 97, dt):to(dev):requires_grad_()
  local b = c.bias and fill({ c.w[1] }, 271, 1 + c.k, 13, dt):to(dev):requires_grad_() or nil
  local f = c.nd == 2 and torch.conv2d or torch.conv1d
  local y = f(x, w, b, c.opts)
  assert.are.equal(dt, y.dtype)
  assert.are.equal(torch.device(dev), y.device)
  local gy = fill(c.y, 613, 7 + c.k, 101, dt):to(dev)
  y:backward(gy)
  local tol, where = TOL[dt], ("%s (%s, %s)"):format(c.name, dev, tostring(dt))
  expect_close(y, c.out, c.y, tol, where .. " output")
  expect_close(x.grad, c.gx, c.x, tol, where .. " input gradient")
  expect_close(w.grad, c.gw, c.w, tol, where .. " weight gradient")
  if c.bias then expect_close(b.grad, c.gb, { c.w[1] }, tol, where .. " bias gradient") end
end

local function err_of(f)
  local ok, e = pcall(f)
  assert.is_false(ok, "expected an error")
  return (tostring(e):gsub("^[^\n]-:%d+: ", ""))
end

describe("conv2d and conv1d", function()
  local saved_n, saved_cap
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function()
    collectgarbage(); collectgarbage()
    torch._sim_configure(saved_n, saved_cap)
  end)

  for _, dev in ipairs({ "cpu", "cuda:0" }) do
    describe("match PyTorch on " .. dev, function()
      for _, c in ipairs(GOLD) do
        it(c.name, function()
          run_case(c, dev, torch.float32)
          run_case(c, dev, torch.float64)
        end)
      end
    end)

    describe("with the batch in chunks of one sample (the column cap lowered) on " .. dev, function()
      local cap
      before_each(function() cap = torch._conv_col_cap(1) end)
      after_each(function() torch._conv_col_cap(cap) end)
      for _, c in ipairs(GOLD) do
        if c.x[1] > 1 and #c.x == c.nd + 2 then
          it(c.name, function() run_case(c, dev, torch.float64) end)
        end
      end
    end)
  end

  it("splits the batch into chunks that fit the cap, and only then", function()
    -- x [5, 3, 9, 8], w [4, 3, 3, 3], padding 1: 27 x 72 columns per sample
    -- (7776 bytes in float32); a cap of two samples gives chunks 2, 2, 1
    local x = fill({ 5, 3, 9, 8 }, 31, 1, 53, torch.float32):requires_grad_()
    local w = fill({ 4, 3, 3, 3 }, 17, 2, 29, torch.float32):requires_grad_()
    local function run()
      x.grad, w.grad = nil, nil
      local y
      local p = torch.profiler.profile(function()
        y = torch.conv2d(x, w, nil, { padding = 1 })
        y:sum():backward()
      end)
      local calls = 0
      for _, r in ipairs(p:key_averages()) do
        if r.name == "im2col" then calls = calls + r.calls end
      end
      return y:detach(), x.grad, w.grad, calls
    end
    local y1, gx1, gw1, n1 = run()
    assert.are.equal(2, n1) -- one chunk: forward and weight gradient
    local cap = torch._conv_col_cap(2 * 7776)
    local ok, y2, gx2, gw2, n2 = pcall(run)
    torch._conv_col_cap(cap)
    assert(ok, y2)
    assert.are.equal(6, n2) -- three chunks, twice
    assert.is_true(y1:allclose(y2, 1e-6, 1e-6))
    assert.is_true(gx1:allclose(gx2, 1e-6, 1e-6))
    assert.is_true(gw1:allclose(gw2, 1e-5, 1e-5))
    -- with groups (a product per group, then one copy per chunk): the
    -- same numbers in chunks of 2, 2, 1 as in one
    local wg = fill({ 6, 1, 3, 3 }, 19, 4, 31, torch.float32)
    local b = fill({ 6 }, 5, 1, 7, torch.float32)
    local one = torch.conv2d(x:detach(), wg, b, { padding = 1, groups = 3 })
    cap = torch._conv_col_cap(2 * 7776)
    local ok2, chunked = pcall(torch.conv2d, x:detach(), wg, b, { padding = 1, groups = 3 })
    torch._conv_col_cap(cap)
    assert(ok2, chunked)
    assert.is_true(one:allclose(chunked, 1e-6, 1e-6))
  end)

  it("takes 16 times the cap on a device whose memory is not the host's (a GPU's)", function()
    -- the staged simulated devices stand for a real GPU's memory
    local x = fill({ 5, 3, 9, 8 }, 31, 1, 53, torch.float32)
    local w = fill({ 4, 3, 3, 3 }, 17, 2, 29, torch.float32)
    local function im2col_calls(dev)
      local xd, wd = x:to(dev), w:to(dev)
      local y
      local p = torch.profiler.profile(function() y = torch.conv2d(xd, wd, nil, { padding = 1 }) end)
      local calls = 0
      for _, r in ipairs(p:key_averages()) do
        if r.name == "im2col" then calls = calls + r.calls end
      end
      return calls, y:cpu()
    end
    local cap = torch._conv_col_cap(2 * 7776) -- two samples' columns (float32)
    -- (host: on a modelled GPU the conv's kernels are one implicit-GEMM row,
    -- named conv2d: profiler_model_spec)
    local model = torch.cuda._set_gpu_model("host")
    local ok, err = pcall(function()
      local n_cpu, y_cpu = im2col_calls("cpu")
      assert.are.equal(3, n_cpu)
      torch._sim_configure(2, 0, true)
      local n_gpu, y_gpu = im2col_calls("cuda:0")
      assert.are.equal(1, n_gpu)
      assert.is_true(y_cpu:allclose(y_gpu, 1e-6, 1e-6))
    end)
    torch._conv_col_cap(cap)
    collectgarbage(); collectgarbage()
    torch._sim_configure(2)
    torch.cuda._set_gpu_model(model)
    assert(ok, err)
  end)

  it("a 1x1 stride-1 convolution builds no columns", function()
    local x, w = torch.randn(4, 6, 5, 5), torch.randn(3, 6, 1, 1)
    local p = torch.profiler.profile(function() local _ = torch.conv2d(x, w) end)
    for _, r in ipairs(p:key_averages()) do assert.are_not.equal("im2col", r.name) end
    -- and agrees with the same product written as a matmul
    local want = w:view(3, 6):matmul(x:view(4, 6, 25)):view(4, 3, 5, 5)
    assert.is_true(torch.conv2d(x, w):allclose(want, 1e-5, 1e-5))
  end)

  it("passes float64 gradchecks (strides, dilation, groups, 'same', conv1d)", function()
    torch.manual_seed(3)
    local function r(...) return torch.randn({ ... }, { dtype = torch.float64, requires_grad = true }) end
    H.gradcheck(function(x, w, b) return torch.conv2d(x, w, b, { stride = 2, padding = 1, dilation = 2, groups = 2 }) end,
      { r(2, 4, 7, 6), r(4, 2, 3, 2), r(4) })
    H.gradcheck(function(x, w) return torch.conv2d(x, w, nil, { padding = "same" }) end, { r(1, 2, 5, 4), r(3, 2, 2, 3) })
    H.gradcheck(function(x, w, b) return torch.conv1d(x, w, b, { stride = 3 }) end, { r(2, 3, 10), r(2, 3, 2), r(2) })
  end)

  it("is deterministic: the same call gives the same bits, on every device", function()
    for _, dev in ipairs({ "cpu", "cuda:0" }) do
      local x = fill({ 3, 4, 11, 9 }, 13, 1, 37, torch.float32):to(dev):requires_grad_()
      local w = fill({ 6, 2, 3, 3 }, 7, 3, 23, torch.float32):to(dev):requires_grad_()
      local function go()
        x.grad, w.grad = nil, nil
        local y = torch.conv2d(x, w, nil, { stride = 2, padding = 1, groups = 2 })
        y:backward(torch.ones_like(y))
        return y:detach():cpu(), x.grad:cpu(), w.grad:cpu()
      end
      local y1, gx1, gw1 = go()
      local y2, gx2, gw2 = go()
      assert.is_true(y1:equal(y2) and gx1:equal(gx2) and gw1:equal(gw2), dev)
    end
  end)

  it("records ConvolutionBackward0, and needs no gradient for inputs that need none", function()
    local x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3, { requires_grad = true })
    local y = torch.conv2d(x, w)
    assert.are.equal("<ConvolutionBackward0>", y.grad_fn)
    y:sum():backward()
    assert.is_nil(x.grad)
    assert.are.same({ 3, 2, 3, 3 }, dims(w.grad))
    assert.is_nil(torch.conv2d(x, w:detach()).grad_fn)
  end)

  it("reads strided inputs (views) as their values, and refuses a saved input changed in place", function()
    local xt = torch.randn(2, 3, 7, 6):transpose(3, 4)           -- [2, 3, 6, 7], not contiguous
    local wt = torch.randn(4, 3, 3, 2):transpose(3, 4)           -- [4, 3, 2, 3]
    local b = torch.randn(8):narrow(1, 1, 4)
    local want = torch.conv2d(xt:contiguous(), wt:contiguous(), b:contiguous(), { padding = 1 })
    assert.is_true(torch.conv2d(xt, wt, b, { padding = 1 }):equal(want))
    local x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3, { requires_grad = true })
    local y = torch.conv2d(x, w)
    x:add_(1)
    local msg = err_of(function() y:sum():backward() end)
    assert(msg:find("modified by an inplace operation", 1, true), msg)
  end)

  it("takes the options in the bias's place and is also nn.functional's table", function()
    local x, w = torch.randn(1, 2, 6, 6), torch.randn(3, 2, 3, 3)
    assert.are.same({ 1, 3, 2, 2 }, dims(torch.conv2d(x, w, { stride = 2 })))
    assert.are.equal(F.conv2d, torch.conv2d)
    assert.are.equal(F.conv1d, torch.conv1d)
    assert.are.same({ 1, 3, 6, 6 }, dims(F.conv2d(x, w, nil, { padding = { 1, 1 } })))
    -- an empty batch gives an empty output and zero gradients
    local e = torch.zeros(0, 2, 6, 6, { requires_grad = true })
    local ye = torch.conv2d(e, w, torch.ones(3))
    assert.are.same({ 0, 3, 4, 4 }, dims(ye))
  end)

  describe("errors as PyTorch's", function()
    local x = torch.randn(2, 3, 28, 28)
    local cases = {
      { function() return torch.conv2d(torch.randn(2, 1, 4, 4), torch.randn(6, 1, 5, 5)) end,
        "Calculated padded input size per channel: (4 x 4). Kernel size: (5 x 5). Kernel size can't be greater than actual input size" },
      { function() return torch.conv2d(torch.randn(2, 3, 4, 4), torch.randn(6, 3, 3, 3), nil, { dilation = 2 }) end,
        "Calculated padded input size per channel: (4 x 4). Kernel size: (5 x 5). Kernel size can't be greater than actual input size" },
      { function() return torch.conv1d(torch.randn(2, 3, 4), torch.randn(6, 3, 5)) end,
        "Calculated padded input size per channel: (4). Kernel size: (5). Kernel size can't be greater than actual input size" },
      { function() return torch.conv2d(x, torch.randn(6, 1, 5, 5)) end,
        "Given groups=1, weight of size [6, 1, 5, 5], expected input[2, 3, 28, 28] to have 1 channels, but got 3 channels instead" },
      { function() return torch.conv2d(torch.randn(3, 28, 28), torch.randn(6, 1, 5, 5)) end,
        "Given groups=1, weight of size [6, 1, 5, 5], expected input[1, 3, 28, 28] to have 1 channels, but got 3 channels instead" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), nil, { groups = 2 }) end,
        "Given groups=2, weight of size [6, 3, 5, 5], expected input[2, 3, 28, 28] to have 6 channels, but got 3 channels instead" },
      { function() return torch.conv2d(x, torch.randn(4, 1, 5, 5), nil, { groups = 3 }) end,
        "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [4, 1, 5, 5] instead" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5)) end,
        "Expected 3-dimensional input for 3-dimensional weight [6, 3, 5], but got 4-dimensional input of size [2, 3, 28, 28] instead" },
      { function() return torch.conv1d(torch.randn(2, 3, 10), torch.randn(6, 3, 5, 5)) end,
        "Expected 4-dimensional input for 4-dimensional weight [6, 3, 5, 5], but got 3-dimensional input of size [2, 3, 10] instead" },
      { function() return torch.conv2d(torch.randn(3, 28), torch.randn(6, 3, 5, 5)) end,
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 28]" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), torch.randn(5)) end,
        "Given weight of size [6, 3, 5, 5], expected bias to be 1-dimensional with 6 elements, but got bias of size [5] instead" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), nil, { stride = 2, padding = "same" }) end,
        "padding='same' is not supported for strided convolutions" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), nil, { stride = 0 }) end,
        "non-positive stride is not supported" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), nil, { padding = -1 }) end,
        "negative padding is not supported" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), nil, { dilation = 0 }) end,
        "non-positive dilation is not supported" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), nil, { groups = 0 }) end,
        "non-positive groups is not supported" },
      { function() return torch.conv2d(torch.randn(2, 3, 10, 10), torch.randn(0, 3, 5, 5)) end,
        "Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size [0, 3, 5, 5] instead" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5, { dtype = torch.float64 })) end,
        "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), torch.randn(6, { dtype = torch.float64 })) end,
        "Input type (float) and bias type (double) should be the same" },
      { function() return torch.conv2d(x:long(), torch.randn(6, 3, 5, 5):long()) end,
        "conv2d: expected a float32 or float64 input, got int64" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), nil, { padding = "foo" }) end,
        "conv2d: Invalid padding string: 'foo' (expected 'same' or 'valid')" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), nil, { padding = { 1, 2, 3 } }) end,
        "conv2d: expected padding to be a single integer value or a list of 2 integers to match the convolution dimensions, but got padding={1, 2, 3}" },
      { function() return torch.conv1d(torch.randn(2, 3, 10), torch.randn(6, 3, 5), nil, { stride = 1.5 }) end,
        "conv1d: expected stride to be a single integer value or a list of 1 integers to match the convolution dimensions, but got the number 1.5" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5), nil, { strides = 2 }) end,
        "conv2d: unknown option 'strides'" },
      { function() return torch.conv2d(x, torch.randn(6, 3, 5, 5, { device = "cuda:0" })) end,
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!" },
      { function() return torch.conv2d(x, "w") end,
        "conv2d: expected the weight to be a tensor, got string" },
    }
    for i, c in ipairs(cases) do
      it(c[2]:sub(1, 60) .. " (" .. i .. ")", function()
        local msg = err_of(c[1])
        assert(msg:find(c[2], 1, true), "got: " .. msg .. "\nwant: " .. c[2])
      end)
    end
  end)
end)
