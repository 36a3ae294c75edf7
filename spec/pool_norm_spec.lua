-- pool_norm_spec.lua: max/avg/adaptive pooling, batch norm, interpolate and
-- pad (issue 20) against PyTorch's numbers (spec/support/pool_goldens.lua,
-- written by gen_pool_goldens.py with Debian's python3-torch): forward
-- outputs, max pooling's indices and every gradient, in float64 and
-- float32, on the CPU and on a simulated GPU; float64 gradchecks; the
-- running statistics over several steps; the error messages.
local torch = require("torch")
local H = require("helpers")
local G = require("pool_goldens")

-- The generator's inputs (see gen_pool_goldens.py): flat position i from 0.
local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

local function formula_x(shape, kind, dtype, dev, step)
  local v = {}
  for i = 0, numel(shape) - 1 do
    if kind == "ties" then v[i + 1] = (i % 3) * 1.0
    else v[i + 1] = (((i * 37 + (step or 0) * 11) % 101) - 50) / 16 end
  end
  if kind == "nan" then v[6] = 0 / 0 end
  if kind == "specials" then
    v[1], v[6] = 0 / 0, 0 / 0
    v[3], v[4], v[7], v[8] = -math.huge, -math.huge, -math.huge, -math.huge
  end
  return torch.tensor(v, { dtype = dtype, device = dev }):view(table.unpack(shape))
end

local function formula_g(shape, dtype, dev)
  local v = {}
  for i = 0, numel(shape) - 1 do v[i + 1] = (((i * 13) % 29) - 14) / 8 end
  return torch.tensor(v, { dtype = dtype, device = dev }):view(table.unpack(shape))
end

local function shape_of(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end

-- got (a tensor) has the expected shape and values within tol relative
-- (NaN only where NaN is expected, infinities exactly).
local function assert_close(got, shape, want, tol, what)
  assert.are.same(shape, shape_of(got), what .. ": shape")
  local vals = got:reshape(-1):double():cpu():tolist()
  assert.are.equal(#want, #vals, what .. ": element count")
  for i = 1, #want do
    local a, b = vals[i], want[i]
    local ok
    if b ~= b then ok = a ~= a
    elseif a == b then ok = true -- infinities too
    else ok = math.abs(a - b) <= tol * (1 + math.abs(b)) end
    if not ok then
      error(("%s: element %d is %s, PyTorch gives %s (tolerance %g)"):format(what, i, tostring(a), tostring(b), tol), 2)
    end
  end
end

local F = require("torch.nn.functional_pool")

local CONFIGS = {
  { dtype = torch.float64, tol = 1e-12, dev = "cpu" },
  { dtype = torch.float32, tol = 2e-6, dev = "cpu" },
  { dtype = torch.float64, tol = 1e-12, dev = "cuda:0" },
  { dtype = torch.float32, tol = 2e-6, dev = "cuda:0" },
}

local saved_n, saved_cap

describe("pooling, batch norm, interpolate and pad", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  for _, cfg in ipairs(CONFIGS) do
    local tag = (" (%s, %s)"):format(tostring(cfg.dtype):gsub("torch%.", ""), cfg.dev)

    describe("as PyTorch" .. tag, function()
      for _, c in ipairs(G.pool) do
        it(c.op .. ": " .. c.name, function()
          local x = formula_x(c.shape, c.input, cfg.dtype, cfg.dev):requires_grad_()
          local y, idx
          if c.op == "max_pool2d" or c.op == "adaptive_max_pool2d" then
            local o = {}
            for k, v in pairs(c.opts) do o[k] = v end
            o.return_indices = true
            y, idx = F[c.op](x, c.arg, o)
          elseif c.op == "avg_pool2d" then
            y = F[c.op](x, c.arg, c.opts)
          else
            y = F[c.op](x, c.arg)
          end
          assert.are.equal(torch.device(cfg.dev), y.device)
          assert.are.equal(cfg.dtype, y.dtype)
          assert_close(y, c.out_shape, c.out, cfg.tol, "output")
          if c.idx then
            assert.are.equal(torch.int64, idx.dtype)
            assert.are.same(c.idx, idx:reshape(-1):cpu():tolist())
          end
          y:backward(formula_g(c.out_shape, cfg.dtype, cfg.dev))
          assert_close(x.grad, c.shape, c.gx, cfg.tol, "input gradient")
        end)
      end

      for _, c in ipairs(G.batch_norm) do
        it("batch_norm: " .. c.name, function()
          local function vec(list) return torch.tensor(list, { dtype = cfg.dtype, device = cfg.dev }) end
          local rm, rv = vec(c.rm0), vec(c.rv0)
          local w = c.affine and vec(c.w):requires_grad_() or nil
          local b = c.affine and vec(c.b):requires_grad_() or nil
          local x, y
          for step = 1, c.steps do
            x = formula_x(c.shape, "plain", cfg.dtype, cfg.dev, step - 1):requires_grad_()
            y = F.batch_norm(x, rm, rv, { weight = w, bias = b, training = c.training, momentum = c.momentum,
              eps = c.eps })
            assert_close(y, c.shape, c.out[step], cfg.tol * 10, "output of step " .. step)
            assert_close(rm, { c.shape[2] }, c.rm[step], cfg.tol, "running_mean after step " .. step)
            assert_close(rv, { c.shape[2] }, c.rv[step], cfg.tol, "running_var after step " .. step)
          end
          y:backward(formula_g(c.shape, cfg.dtype, cfg.dev))
          assert_close(x.grad, c.shape, c.gx, cfg.tol * 10, "input gradient")
          if c.affine then
            assert_close(w.grad, { c.shape[2] }, c.gw, cfg.tol * 10, "weight gradient")
            assert_close(b.grad, { c.shape[2] }, c.gb, cfg.tol * 10, "bias gradient")
          end
          local ye = F.batch_norm(formula_x(c.shape, "plain", cfg.dtype, cfg.dev, c.steps), rm, rv,
            { weight = w, bias = b, eps = c.eps })
          assert_close(ye, c.shape, c.eval_out, cfg.tol * 10, "evaluation output")
        end)
      end

      for _, c in ipairs(G.interpolate) do
        it("interpolate: " .. c.name, function()
          local x = formula_x(c.shape, "plain", cfg.dtype, cfg.dev):requires_grad_()
          local y = F.interpolate(x, c.opts)
          assert.are.equal(torch.device(cfg.dev), y.device)
          assert_close(y, c.out_shape, c.out, cfg.tol * 2, "output")
          y:backward(formula_g(c.out_shape, cfg.dtype, cfg.dev))
          assert_close(x.grad, c.shape, c.gx, cfg.tol * 4, "input gradient")
        end)
      end

      for _, c in ipairs(G.pad) do
        it("pad: " .. c.name, function()
          local x = formula_x(c.shape, "plain", cfg.dtype, cfg.dev):requires_grad_()
          local y = F.pad(x, c.pads, { value = c.value })
          assert.are.equal(torch.device(cfg.dev), y.device)
          assert_close(y, c.out_shape, c.out, 0, "output")
          y:backward(formula_g(c.out_shape, cfg.dtype, cfg.dev))
          assert_close(x.grad, c.shape, c.gx, 0, "input gradient")
        end)
      end
    end)
  end

  describe("gradchecks in float64", function()
    local function inp(...)
      return (torch.rand(table.pack(...), { dtype = torch.float64 }) * 4 - 2):requires_grad_()
    end
    it("max_pool2d (padding, dilation, ceil_mode)", function()
      H.gradcheck(function(x) return F.max_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true }) end, { inp(2, 2, 6, 7) })
      H.gradcheck(function(x) return F.max_pool2d(x, { 2, 3 }, { stride = 1, dilation = 2 }) end, { inp(1, 2, 6, 7) })
    end)
    it("avg_pool2d both ways of counting padding", function()
      H.gradcheck(function(x) return F.avg_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true }) end, { inp(2, 2, 6, 7) })
      H.gradcheck(function(x) return F.avg_pool2d(x, 3, { stride = 2, padding = 1, count_include_pad = false }) end,
        { inp(1, 2, 7, 5) })
    end)
    it("adaptive pools", function()
      H.gradcheck(function(x) return F.adaptive_avg_pool2d(x, { 3, 4 }) end, { inp(2, 2, 7, 9) })
      H.gradcheck(function(x) return F.adaptive_max_pool2d(x, { 3, 2 }) end, { inp(1, 2, 7, 5) })
    end)
    it("batch_norm in training (x, weight, bias) and evaluation", function()
      local c = 3
      for _, shape in ipairs({ { 4, c }, { 2, c, 5 }, { 2, c, 3, 4 } }) do
        H.gradcheck(function(x, w, b)
          return F.batch_norm(x, torch.zeros(c, { dtype = torch.float64 }), torch.ones(c, { dtype = torch.float64 }),
            { weight = w, bias = b, training = true })
        end, { inp(table.unpack(shape)), inp(c), inp(c) })
      end
      local rm, rv = torch.tensor({ 0.5, -1, 2 }, { dtype = torch.float64 }), torch.tensor({ 1, 2, 0.5 }, { dtype = torch.float64 })
      H.gradcheck(function(x, w, b) return F.batch_norm(x, rm, rv, { weight = w, bias = b }) end,
        { inp(2, c, 3, 2), inp(c), inp(c) })
      H.gradcheck(function(x) return F.batch_norm(x, nil, nil, { training = true }) end, { inp(3, 2, 4) })
    end)
    it("interpolate nearest and bilinear, align_corners both ways", function()
      H.gradcheck(function(x) return F.interpolate(x, { size = { 5, 7 } }) end, { inp(1, 2, 3, 4) })
      H.gradcheck(function(x) return F.interpolate(x, { size = { 5, 3 }, mode = "bilinear" }) end, { inp(1, 2, 3, 4) })
      H.gradcheck(function(x) return F.interpolate(x, { size = { 2, 7 }, mode = "bilinear", align_corners = true }) end,
        { inp(2, 1, 4, 3) })
      H.gradcheck(function(x) return F.interpolate(x, { scale_factor = 1.5, mode = "linear" }) end, { inp(2, 2, 4) })
    end)
    it("pad with positive and negative pads", function()
      H.gradcheck(function(x) return F.pad(x, { 1, -1, -2, 2 }, { value = 3 }) end, { inp(2, 4, 5) })
    end)
  end)

  describe("autograd bookkeeping", function()
    it("names the nodes as PyTorch does", function()
      local x = torch.rand(1, 1, 4, 4):requires_grad_()
      local rm, rv = torch.zeros(1), torch.ones(1)
      local names = {
        MaxPool2DWithIndicesBackward0 = F.max_pool2d(x, 2),
        AvgPool2DBackward0 = F.avg_pool2d(x, 2),
        AdaptiveAvgPool2DBackward0 = F.adaptive_avg_pool2d(x, 2),
        AdaptiveMaxPool2DBackward0 = F.adaptive_max_pool2d(x, 2),
        NativeBatchNormBackward0 = F.batch_norm(x, rm, rv, { training = true }),
        UpsampleNearest2DBackward1 = F.interpolate(x, { scale_factor = 2 }),
        UpsampleBilinear2DBackward1 = F.interpolate(x, { scale_factor = 2, mode = "bilinear" }),
        ConstantPadNdBackward0 = F.pad(x, { 1, 1 }),
      }
      for name, y in pairs(names) do assert.truthy(tostring(y.grad_fn):find(name, 1, true), name) end
    end)
    it("records nothing under no_grad and leaves indices without a graph", function()
      local x = torch.rand(1, 1, 4, 4):requires_grad_()
      local y, idx = F.max_pool2d(x, 2, { return_indices = true })
      assert.is_false(idx.requires_grad)
      torch.no_grad(function()
        assert.is_nil(F.max_pool2d(x, 2).grad_fn)
        assert.is_nil(F.interpolate(x, { size = 3 }).grad_fn)
      end)
      assert.truthy(y.grad_fn)
    end)
    it("batch_norm gives weight and bias gradients only when they require grad", function()
      local x = torch.rand(4, 3):requires_grad_()
      local w, b = torch.ones(3), torch.zeros(3):requires_grad_()
      F.batch_norm(x, nil, nil, { weight = w, bias = b, training = true }):sum():backward()
      assert.is_nil(w.grad)
      assert.are.same({ 4, 4, 4 }, b.grad:tolist())
      assert.truthy(x.grad)
    end)
    it("float16 inputs compute through float32 and keep their dtype", function()
      local x = torch.arange(16.0):view(1, 1, 4, 4):half()
      local y = F.max_pool2d(x, 2)
      assert.are.equal(torch.float16, y.dtype)
      assert.are.same({ 5, 7, 13, 15 }, y:reshape(-1):float():tolist())
      assert.are.equal(torch.float16, F.interpolate(x, { scale_factor = 2, mode = "bilinear" }).dtype)
      local bn = F.batch_norm(x, nil, nil, { training = true })
      assert.are.equal(torch.float16, bn.dtype)
    end)
  end)

  it("a dilated max-pool window that misses the plane gives -inf, index -1 and no gradient", function()
    -- PyTorch 1.13 reports cells outside the plane here (index 4 of a
    -- 4-cell plane) and sends their gradient to the wrong cells
    for _, dev in ipairs({ "cpu", "cuda:0" }) do
      local x = torch.arange(4.0, { device = dev }):view(1, 1, 4, 1):requires_grad_()
      local y, idx = F.max_pool2d(x, { 1, 2 }, { stride = { 1, 4 }, padding = { 0, 1 }, dilation = { 1, 2 },
        return_indices = true })
      assert.are.same({ -math.huge, -math.huge, -math.huge, -math.huge }, y:reshape(-1):cpu():tolist())
      assert.are.same({ -1, -1, -1, -1 }, idx:reshape(-1):cpu():tolist())
      y:sum():backward()
      assert.are.same({ 0, 0, 0, 0 }, x.grad:reshape(-1):cpu():tolist())
    end
  end)

  describe("running statistics", function()
    it("update in place with momentum and the unbiased variance, and eval uses them", function()
      local x = torch.tensor({ { 1.0, 10 }, { 3, 20 }, { 5, 60 } })
      local rm, rv = torch.zeros(2), torch.ones(2)
      local rm_id = rm
      F.batch_norm(x, rm, rv, { training = true, momentum = 0.5 })
      assert.are.equal(rm_id, rm)
      -- mean (3, 30); unbiased variance (4, 700)
      assert.are.same({ 1.5, 15 }, rm:tolist())
      assert.are.same({ 2.5, 350.5 }, rv:tolist())
      local y = F.batch_norm(torch.tensor({ { 1.5, 15 } }), rm, rv, { eps = 0 })
      assert.are.same({ { 0, 0 } }, y:tolist())
    end)
    it("are left alone when training fails and in evaluation mode", function()
      local rm, rv = torch.zeros(2), torch.ones(2)
      assert.has_error(function() F.batch_norm(torch.rand(1, 2), rm, rv, { training = true }) end)
      F.batch_norm(torch.rand(3, 2), rm, rv)
      assert.are.same({ 0, 0 }, rm:tolist())
      assert.are.same({ 1, 1 }, rv:tolist())
    end)
    it("update on a simulated GPU as on the CPU", function()
      local x = formula_x({ 4, 3, 2, 2 }, "plain", torch.float32, "cpu")
      local r1, v1 = torch.zeros(3), torch.ones(3)
      local r2, v2 = torch.zeros(3, { device = "cuda:1" }), torch.ones(3, { device = "cuda:1" })
      for _ = 1, 3 do
        F.batch_norm(x, r1, v1, { training = true })
        F.batch_norm(x:to("cuda:1"), r2, v2, { training = true })
      end
      assert.are.same(r1:tolist(), r2:cpu():tolist())
      assert.are.same(v1:tolist(), v2:cpu():tolist())
    end)
  end)

  describe("errors", function()
    local function err(f)
      local ok, e = pcall(f)
      assert.is_false(ok, "expected an error")
      return tostring(e)
    end
    local x = torch.rand(1, 1, 4, 4)
    it("say what was wrong with a pooling window", function()
      assert.truthy(err(function() F.max_pool2d(x, 5) end):find(
        "Given input size: (1x4x4). Calculated output size: (1x0x0). Output size is too small", 1, true))
      assert.truthy(err(function() F.max_pool2d(x, 3, { padding = 2 }) end):find(
        "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1", 1, true))
      assert.truthy(err(function() F.avg_pool2d(x, 3, { padding = 2 }) end):find(
        "pad should be at most half of kernel size, but got pad=2 and kernel_size=3", 1, true))
      assert.truthy(err(function() F.max_pool2d(x, 2, { stride = 0 }) end):find(
        "stride should be greater than zero, but got dH: 0 dW: 0", 1, true))
      assert.truthy(err(function() F.max_pool2d(x, 0, { stride = 1 }) end):find(
        "kernel size should be greater than zero, but got kH: 0 kW: 0", 1, true))
      assert.truthy(err(function() F.max_pool2d(x, 2, { dilation = 0 }) end):find(
        "dilation should be greater than zero", 1, true))
      assert.truthy(err(function() F.max_pool2d(torch.rand(2, 1, 1, 4, 4), 2) end):find(
        "non-empty 3D or 4D (batch mode) tensor expected for input, but got [2, 1, 1, 4, 4]", 1, true))
      assert.truthy(err(function() F.avg_pool2d(torch.rand(4, 4), 2) end):find(
        "Expected 3D or 4D (batch mode) tensor", 1, true))
      assert.truthy(err(function() F.max_pool2d(torch.ones(1, 4, 4, { dtype = torch.int64 }), 2) end):find(
        "\"max_pool2d\" not implemented for 'Long'", 1, true))
      assert.truthy(err(function() F.max_pool2d(x, 2.5) end):find(
        "max_pool2d: kernel_size must be an integer or a pair {h, w} of integers, got the number 2.5", 1, true))
      assert.truthy(err(function() F.max_pool2d(x, 2, { strides = 1 }) end):find("strides", 1, true))
      assert.truthy(err(function() F.adaptive_avg_pool2d(torch.rand(1, 1, 0, 4), 2) end):find(
        "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
        .. "[1, 1, 0, 4] with dimension 2 being empty", 1, true))
      assert.truthy(err(function() F.adaptive_max_pool2d(x, { -1, 2 }) end):find(
        "elements of output_size must be greater than or equal to 0", 1, true))
    end)
    it("say what was wrong with batch norm's arguments", function()
      local x2 = torch.rand(4, 3)
      assert.truthy(err(function() F.batch_norm(x2, torch.zeros(4), torch.ones(3)) end):find(
        "running_mean should contain 3 elements not 4", 1, true))
      assert.truthy(err(function() F.batch_norm(x2, torch.zeros(3), torch.ones(4)) end):find(
        "running_var should contain 3 elements not 4", 1, true))
      assert.truthy(err(function() F.batch_norm(x2, torch.zeros(3), torch.ones(3), { weight = torch.ones(2) }) end):find(
        "weight should contain 3 elements not 2", 1, true))
      assert.truthy(err(function() F.batch_norm(torch.rand(1, 3), torch.zeros(3), torch.ones(3), { training = true }) end):find(
        "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])", 1, true))
      assert.truthy(err(function() F.batch_norm(x2, nil, nil) end):find(
        "running_mean must be defined in evaluation mode", 1, true))
      assert.truthy(err(function() F.batch_norm(torch.rand(3), nil, nil, { training = true }) end):find(
        "expected an input of at least 2 dims", 1, true))
      local e = err(function() F.batch_norm(x2:to("cuda:0"), torch.zeros(3), torch.ones(3, { device = "cuda:0" })) end)
      assert.truthy(e:find("cuda:0 and cpu!", 1, true), e)
      assert.truthy(e:find("running_mean is on cpu", 1, true), e)
      assert.truthy(err(function() F.batch_norm(x2, nil, nil, { training = true, moment = 0.1 }) end):find(
        "momentum", 1, true))
    end)
    it("say what was wrong with interpolate and pad", function()
      assert.truthy(err(function() F.interpolate(torch.rand(1, 1, 4), { size = 3, mode = "bilinear" }) end):find(
        "Got 3D input, but bilinear mode needs 4D input", 1, true))
      assert.truthy(err(function() F.interpolate(x, { size = 3, align_corners = true }) end):find(
        "align_corners option can only be set with the interpolating modes", 1, true))
      assert.truthy(err(function() F.interpolate(x, { size = 0 }) end):find(
        "Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: 0, W: 0)", 1, true))
      assert.truthy(err(function() F.interpolate(x, {}) end):find("either size or scale_factor should be defined", 1, true))
      assert.truthy(err(function() F.interpolate(x, { size = 2, scale_factor = 2 }) end):find(
        "only one of size or scale_factor should be defined", 1, true))
      assert.truthy(err(function() F.interpolate(x, { size = 2, mode = "bicubic" }) end):find("bicubic", 1, true))
      assert.truthy(err(function() F.pad(x, { 1, 2, 3 }) end):find("Padding length must be divisible by 2", 1, true))
      assert.truthy(err(function() F.pad(x, { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }) end):find("Padding length too large", 1, true))
      assert.truthy(err(function() F.pad(x, { -3, -2 }) end):find(
        "The input size 4, plus negative padding -3 and -2 resulted in a negative output size", 1, true))
      -- (API fuzzer seed 1234: signed overflow in the size before this check)
      assert.truthy(err(function() F.pad(x, { 1 << 40, math.maxinteger }) end):find("does not fit in 64 bits", 1, true))
      assert.truthy(err(function() F.pad(x, { math.mininteger, math.mininteger }) end):find("does not fit in 64 bits", 1, true))
      assert.truthy(err(function() F.pad(x, { 1, 1 }, { mode = "reflect" }) end):find("only 'constant'", 1, true))
      -- the value must fit the dtype, as torch.full's (issue 33: 300 wrapped to 44 in int8, NaN gave 0)
      local i8 = torch.zeros(2, { dtype = torch.int8 })
      assert.truthy(err(function() F.pad(i8, { 1, 1 }, { value = 300 }) end):find(
        "pad: value cannot be converted to type int8 without overflow: 300", 1, true))
      assert.truthy(err(function() F.pad(torch.zeros(2, { dtype = torch.int32 }), { 1, 1 }, { value = 0 / 0 }) end):find(
        "pad: value cannot be converted to type int32 without overflow: nan", 1, true))
      assert.are.same({ -128, 0, 0, 127 }, F.pad(F.pad(i8, { 1, 0 }, { value = -128 }), { 0, 1 }, { value = 127 }):tolist())
    end)
    it("leave the input untouched", function()
      local before = x:clone()
      pcall(F.max_pool2d, x, 5)
      pcall(F.batch_norm, x, torch.zeros(2), torch.ones(1))
      assert.is_true(x:equal(before))
    end)
  end)

  it("src/backend/cuda/kernels/pool.cu's gathering backward passes match a scatter (its device code run on the host)", function()
    if not os.execute("command -v g++ >/dev/null 2>&1") then return pending("no g++ on this machine") end
    local exe = os.tmpname()
    -- without the sanitizer runtimes a sanitizer run preloads: they are not
    -- what is under test, and g++ itself leaks under them
    local ok = os.execute(("env -u LD_PRELOAD g++ -O1 -std=c++17 -Isrc -o %s spec/support/pool_cu_host.cpp 2>&1")
      :format(exe))
    assert(ok, "spec/support/pool_cu_host.cpp did not compile")
    local f = io.popen("env -u LD_PRELOAD " .. exe .. " 2>&1")
    local out = f:read("a")
    local good = f:close()
    os.remove(exe)
    assert(good, out)
    assert.truthy(out:find("pool: %d+ configs, 0 bad"), out)
    assert.truthy(out:find("resize: %d+ configs, 0 bad"), out)
  end)

  it("is exposed as torch.max_pool2d & co.", function()
    for _, name in ipairs({ "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "batch_norm",
      "pad", "interpolate" }) do
      assert.are.equal(F[name], torch[name], name)
    end
  end)
end)
