-- The CPU's Winograd F(2x2, 3x3) path for 3x3 stride-1 float32
-- convolutions (src/backend/cpu/cpu_winograd.c, chosen in
-- src/ops/gs_op_conv.c): forward, input and weight gradients against
-- PyTorch's numbers (spec/support/conv_winograd_goldens.lua, from
-- gen_conv_winograd_goldens.py, and the 3x3 stride-1 cases of
-- conv_goldens.lua), against the im2col path and a float64 reference on
-- sizes that split the batch into many chunks; which convolutions take the
-- path (torch._conv_winograd, internal: mode 0 off, 1 auto, 2 wherever the
-- geometry allows; its second result counts the passes that took it).
local torch = require("torch")
local WGOLD = require("conv_winograd_goldens")
local GOLD = require("conv_goldens")

local CC = require("conv_check")
local fill, dims, expect_close = CC.fill, CC.dims, CC.expect_close

local function calls() local _, n = torch._conv_winograd(); return n end

-- Runs golden case c in float32 on the cpu; returns how many passes took
-- the Winograd path.
local function run_case(c)
  local dt = torch.float32
  local x = fill(c.x, 7919, 3 + c.k, 211, dt):requires_grad_()
  local w = fill(c.w, 4391, 5 + c.k, 97, dt):requires_grad_()
  local b = c.bias and fill({ c.w[1] }, 271, 1 + c.k, 13, dt):requires_grad_() or nil
  local n0 = calls()
  local y = torch.conv2d(x, w, b, c.opts)
  y:backward(fill(c.y, 613, 7 + c.k, 101, dt))
  expect_close(y, c.out, c.y, 2e-5, c.name .. " output")
  expect_close(x.grad, c.gx, c.x, 2e-5, c.name .. " input gradient")
  expect_close(w.grad, c.gw, c.w, 2e-5, c.name .. " weight gradient")
  if c.bias then expect_close(b.grad, c.gb, { c.w[1] }, 2e-5, c.name .. " bias gradient") end
  return calls() - n0
end

local function is_wino_case(c)
  local o = c.opts
  return c.nd == 2 and #c.w == 4 and c.w[3] == 3 and c.w[4] == 3 and (o.stride or 1) == 1
    and (o.dilation or 1) == 1 and (o.groups or 1) == 1 and type(o.padding or 0) ~= "table"
end

describe("conv2d's Winograd F(2x2, 3x3) path (cpu, float32)", function()
  local mode
  before_each(function() mode = torch._conv_winograd(2) end)
  after_each(function() torch._conv_winograd(mode) end)

  describe("matches PyTorch", function()
    for _, c in ipairs(WGOLD) do
      it(c.name, function() assert.are.equal(3, run_case(c)) end)
    end
    for _, c in ipairs(GOLD) do
      if is_wino_case(c) then
        it(c.name .. " (conv_goldens)", function() assert.are.equal(3, run_case(c)) end)
      end
    end
  end)

  -- x [N, C, 64, 64] with 32 channels in and out: 4 MiB of transforms per
  -- sample, so 9 samples take the per-thread chunks (one sample each) and
  -- 3 the staged chunks; odd sizes leave a half tile at the edges.
  local function against_im2col(N, C, Co, Hh, Ww, pad, bias)
    torch.manual_seed(N * 100 + Hh)
    local x = torch.randn(N, C, Hh, Ww)
    local w = torch.randn(Co, C, 3, 3) * (1 / math.sqrt(9 * C))
    local b = bias and torch.randn(Co) or nil
    local gy
    local function run(m)
      torch._conv_winograd(m)
      local xr, wr = x:clone():requires_grad_(), w:clone():requires_grad_()
      local br = b and b:clone():requires_grad_() or nil
      local n0 = calls()
      local y = torch.conv2d(xr, wr, br, { padding = pad })
      gy = gy or torch.randn(table.unpack(dims(y)))
      y:backward(gy)
      return { y:detach(), xr.grad, wr.grad, br and br.grad }, calls() - n0
    end
    local ref, n_ref = run(0)
    local got, n_got = run(2)
    assert.are.equal(0, n_ref)
    assert.are.equal(3, n_got)
    for i, what in ipairs({ "output", "input gradient", "weight gradient", "bias gradient" }) do
      if ref[i] then
        local scale = ref[i]:abs():max():item()
        local err = (got[i] - ref[i]):abs():max():item() / scale
        assert(err < 1e-5, ("%s: relative error %.3g against im2col"):format(what, err))
      end
    end
  end

  it("agrees with im2col when the batch is split into per-thread chunks", function()
    against_im2col(9, 32, 32, 63, 64, 1, true)
  end)
  it("agrees with im2col when the batch is split into staged chunks", function()
    against_im2col(3, 32, 32, 64, 63, 1, false)
  end)
  it("agrees with im2col with padding 0 and 2 on one sample", function()
    against_im2col(1, 5, 7, 9, 10, 0, true)
    against_im2col(1, 7, 5, 10, 9, 2, false)
  end)

  -- the transforms take a tile row in segments of 128 tiles: 517 columns
  -- make 258 full tiles (two whole segments and 2 more) and a half tile
  it("agrees with im2col on rows of more than two segments of tiles", function()
    against_im2col(2, 3, 4, 5, 517, 1, true)
    against_im2col(1, 2, 3, 6, 516, 0, false)
  end)

  -- the weight transform takes kernels in segments of 128 input channels
  -- (the input gradient's: 128 output channels)
  it("agrees with im2col with more than 128 channels in and out", function()
    against_im2col(2, 130, 257, 5, 4, 1, true)
  end)

  it("stays within 1e-5 of a float64 reference on ResNet's 3x3 64 -> 64 layer", function()
    torch.manual_seed(7)
    local x = torch.randn(4, 64, 28, 28, { dtype = torch.float64 })
    local w = torch.randn(64, 64, 3, 3, { dtype = torch.float64 }) * (1 / 24)
    local x32, w32 = x:float():requires_grad_(), w:float():requires_grad_()
    local x64, w64 = x:clone():requires_grad_(), w:clone():requires_grad_()
    local y64 = torch.conv2d(x64, w64, nil, { padding = 1 })
    local gy = torch.randn_like(y64)
    y64:backward(gy)
    local n0 = calls()
    local y32 = torch.conv2d(x32, w32, nil, { padding = 1 })
    y32:backward(gy:float())
    assert.are.equal(3, calls() - n0)
    for _, p in ipairs({ { y32, y64, "output" }, { x32.grad, x64.grad, "input gradient" },
      { w32.grad, w64.grad, "weight gradient" } }) do
      local ref = p[2]:detach()
      local err = (p[1]:detach():double() - ref):abs():max():item() / ref:abs():max():item()
      assert(err < 1e-5, ("%s: relative error %.3g against float64"):format(p[3], err))
    end
  end)
end)

describe("which convolutions take the Winograd path", function()
  local mode
  before_each(function() mode = torch._conv_winograd() end)
  after_each(function() torch._conv_winograd(mode) end)

  -- passes of one forward and backward through the Winograd path
  local function passes(x, w, opts)
    x = x:clone():requires_grad_()
    w = w:clone():requires_grad_()
    local n0 = calls()
    local y = torch.conv2d(x, w, nil, opts)
    y:sum():backward()
    return calls() - n0
  end

  it("auto (the default) takes it for ResNet's 3x3 layers, all three passes", function()
    assert.are.equal(1, mode)
    assert.are.equal(3, passes(torch.randn(2, 64, 8, 8), torch.randn(64, 64, 3, 3), { padding = 1 }))
  end)
  it("auto leaves few channels to im2col, where Winograd was measured slower", function()
    assert.are.equal(0, passes(torch.randn(2, 1, 8, 8), torch.randn(64, 1, 3, 3), { padding = 1 }))
  end)
  it("never for float64, strides, dilation, groups, other kernels, or a simulated GPU", function()
    torch._conv_winograd(2)
    local x, w = torch.randn(2, 4, 8, 8), torch.randn(4, 4, 3, 3)
    assert.are.equal(0, passes(x:double(), w:double(), { padding = 1 }))
    assert.are.equal(0, passes(x, w, { stride = 2, padding = 1 }))
    assert.are.equal(0, passes(x, w, { dilation = 2, padding = 2 }))
    assert.are.equal(0, passes(x, torch.randn(4, 2, 3, 3), { groups = 2, padding = 1 }))
    assert.are.equal(0, passes(x, torch.randn(4, 4, 5, 5), { padding = 2 }))
    assert.are.equal(3, passes(x, w, { padding = 1 })) -- the same conv in float32 does
    local saved_n, saved_cap = torch._sim_configure(1)
    local ok, err = pcall(function()
      assert.are.equal(0, passes(x:to("cuda:0"), w:to("cuda:0"), { padding = 1 }))
    end)
    collectgarbage(); collectgarbage()
    torch._sim_configure(saved_n, saved_cap)
    assert(ok, err)
  end)
  it("mode 0 turns it off", function()
    torch._conv_winograd(0)
    assert.are.equal(0, passes(torch.randn(2, 64, 8, 8), torch.randn(64, 64, 3, 3), { padding = 1 }))
  end)
  it("rejects a mode other than 0, 1 or 2", function()
    local ok, e = pcall(torch._conv_winograd, 3)
    assert.is_false(ok)
    assert.matches("expected a mode of 0 %(off%), 1 %(auto%) or 2 %(always%), got 3", tostring(e))
  end)
end)
