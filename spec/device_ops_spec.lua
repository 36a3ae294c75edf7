-- device_ops_spec.lua: every op of the engine on every backend. Each row
-- of OPS runs once on the CPU (the reference) and once on each CUDA
-- device -- two simulated GPUs, and the real GPUs when the build has CUDA
-- and the machine has some -- and the results must agree: same values
-- (exactly on simulated devices, which share the CPU kernels; within a
-- float tolerance on real ones), same dtypes and shapes, and every tensor
-- result on the device the inputs were on.
--
-- A coverage check makes sure every tensor method (torch._methods) has a
-- row here: a new op without one fails that check by name.
local torch = require("torch")

-- ---------------------------------------------------------------- inputs

-- Inputs, built on the CPU from literals and moved to `dev`.
local function inputs(dev)
  local function on(t) return t:to(dev) end
  local d = { dev = dev }
  d.A = on(torch.tensor({ { 1.5, -2.25, 3.0 }, { 0.5, 4.0, -1.0 } }))        -- float32 2x3
  d.B = on(torch.tensor({ { 0.5, 1.25, 2.0 }, { 3.0, 0.75, 1.5 } }))         -- float32 2x3, > 0
  d.P = on(torch.tensor({ { 0.25, 1.0, 2.5 }, { 4.0, 9.0, 0.5 } }))          -- positive, for log/sqrt
  d.I = on(torch.tensor({ { 1, -2, 3 }, { 4, 5, -6 } }))                     -- int64 2x3
  d.J = on(torch.tensor({ { 2, 3, 1 }, { -3, 2, 4 } }))                      -- int64 2x3, no zeros
  d.L = on(torch.tensor({ { true, false, true }, { false, false, true } }))  -- bool
  d.row = on(torch.tensor({ 10.0, 20.0, 30.0 }))                             -- broadcasts over A
  d.col = on(torch.tensor({ { 2.0 }, { -1.0 } }))
  d.M1 = on(torch.tensor({ { 1.0, 2, 3, 4 }, { -1, 0.5, 2, 0 }, { 3, 1, -2, 1 } }))  -- 3x4
  d.M2 = on(torch.tensor({ { 1.0, -1 }, { 2, 0.5 }, { 0, 1 }, { -2, 3 } }))           -- 4x2
  d.v4 = on(torch.tensor({ 1.0, -2, 0.5, 3 }))
  d.BA = on(torch.arange(24):view(2, 3, 4):float() / 7)                      -- 2x3x4
  d.BB = on(torch.arange(40):view(2, 4, 5):float() / 11 - 1)                 -- 2x4x5
  d.D = on(torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } }, { dtype = torch.float64 }))
  d.idx = on(torch.tensor({ 3, 1, 3 }))                                      -- 1-based indices
  return d
end

-- ---------------------------------------------------------------- the ops

-- { name, fn(d) -> results..., opts }. The name starts with the method it
-- covers; `covers` lists more. opts.device: where results must be
-- ("cpu", or a function of the device under test); opts.float_tol: the
-- relative tolerance on real GPUs (default 1e-5).
local OPS = {
  -- ---- views and shape
  { "view", function(d) return d.A:view(3, 2), d.A:view(-1), d.A:view(6, 1) end },
  { "view_as", function(d) return d.A:view_as(d.M1:narrow(1, 1, 2):narrow(2, 1, 3)) end },
  { "reshape", function(d) return d.A:t():reshape(6), d.A:reshape(3, -1) end },
  { "t", function(d) return d.A:t(), d.A:t():contiguous() end },
  { "T (field)", function(d) return d.A.T, d.BA.T end, covers = {} },
  { "transpose", function(d) return d.BA:transpose(1, 3), d.A:transpose(1, 2) end },
  { "permute", function(d) return d.BA:permute(3, 1, 2), d.BA:permute({ 2, 3, 1 }) end },
  { "unsqueeze", function(d) return d.A:unsqueeze(1), d.A:unsqueeze(-1) end },
  { "squeeze", function(d) return d.col:squeeze(), d.col:squeeze(2), d.A:unsqueeze(2):squeeze(2) end },
  { "expand", function(d) return d.col:expand(2, 4), d.row:expand(3, -1) end },
  { "expand_as", function(d) return d.col:expand_as(d.A) end },
  { "flatten", function(d) return d.BA:flatten(), d.BA:flatten(2) end },
  { "narrow", function(d) return d.M1:narrow(2, 2, 2), d.M1:narrow(1, -1, 1) end },
  { "select", function(d) return d.M1:select(1, 2), d.M1:select(2, -1) end },
  { "chunk", function(d) return d.M1:chunk(2), d.M1:chunk(3, 2) end },
  { "split", function(d) return d.M1:split(2), d.M1:split({ 1, 3 }, 2) end },
  { "contiguous", function(d) return d.A:t():contiguous(), d.A:contiguous() end },
  { "is_contiguous", function(d) return d.A:is_contiguous(), d.A:t():is_contiguous() end },
  { "clone", function(d) return d.A:t():clone(), d.I:clone() end },
  { "get_device", function(d) return d.A:get_device() == (d.A.device.index or -1), d.I:get_device() == (d.I.device.index or -1) end },
  { "new_ones", function(d) return d.A:new_ones(2, 2), d.I:new_ones({ 3 }), d.A:new_ones(2, { dtype = torch.float64 }) end,
    covers = { "new_zeros", "new_full", "new_tensor", "new_empty" } },
  { "new_zeros (and new_full, new_tensor, new_empty)", function(d)
      return d.A:new_zeros(3), d.I:new_full({ 2 }, 7), d.A:new_tensor({ 1, 2 }), d.A:new_empty(2, 3).shape
    end },
  { "size", function(d) return d.BA:size(), d.BA:size(2), d.BA:size(-1) end },
  { "stride", function(d) return d.BA:stride(), d.BA:transpose(1, 3):stride(1) end },
  { "dim", function(d) return d.BA:dim(), d.row:dim() end },
  { "numel", function(d) return d.BA:numel() end, covers = { "nelement" } },
  { "element_size", function(d) return d.A:element_size(), d.I:element_size(), d.A:half():element_size() end },
  { "is_floating_point", function(d) return d.A:is_floating_point(), d.I:is_floating_point() end },
  { "storage_offset", function(d) return d.M1:narrow(1, 2, 1):storage_offset() end },
  { "data_ptr", function(d) return math.type(d.A:data_ptr()) end },
  { "pin_memory", function(d)
      local h = d.A:cpu():pin_memory()
      return h:is_pinned(), d.A:cpu():is_pinned(), h:pin_memory():is_pinned(), h:to(d.A.device, { non_blocking = true })
    end, covers = { "is_pinned" } },

  -- ---- indexing and assignment
  { "index x[i]", function(d) return d.A[2], d.A[-1], d.BA[2] end, covers = {} },
  { "index x[{i, j}]", function(d) return d.A[{ 2, 3 }], d.A[{ {}, 2 }], d.M1[{ { 2, 3 }, { 1, 4, 2 } }] end, covers = {} },
  { "index_select", function(d) return d.A:index_select(2, d.idx), d.M1:index_select(1, d.idx) end },
  -- issue 31's Lua functions over the engine's ops (goldens in seq_ops_spec.lua)
  { "where", function(d) return torch.where(d.A:gt(0), d.A, d.row), d.A:where(d.A:lt(0), 0.5) end },
  { "masked_fill", function(d)
      local x = d.A:clone()
      x:masked_fill_(d.A:gt(0), -math.huge)
      return d.A:masked_fill(d.A:lt(0), 2), x, d.I:masked_fill(d.I:gt(0), 7)
    end, covers = { "masked_fill_" } },
  { "repeat", function(d) return d.A["repeat"](d.A, 2, 1, 2), d.I:tile(2) end, covers = { "tile" } },
  { "repeat_interleave", function(d)
      return d.A:repeat_interleave(2, 1), d.A:repeat_interleave(torch.tensor({ 1, 0, 2 }, { device = d.dev }), 2)
    end },
  { "triu", function(d)
      local x = d.M1:clone()
      x:tril_(-1)
      return d.BA:triu(1), d.M1:tril(), d.L:triu(), x, d.I:clone():triu_(1)
    end, covers = { "tril", "triu_", "tril_" } },
  { "mask x[mask], x[mask] = v", function(d)
      local x = d.A:clone()
      x[d.A:gt(0)] = 0
      return d.A[d.A:gt(0)], x
    end, covers = {} },
  { "assign x[{...}] = v", function(d)
      local x = d.A:clone()
      x[{ 1, 2 }] = 7
      x[{ {}, 3 }] = -1.5
      x[2] = d.row
      local y = d.M1:clone()
      y[{ { 1, 2 }, { 2, 3 } }] = d.A:narrow(2, 1, 2)
      return x, y
    end, covers = {} },

  -- ---- dtype conversions
  { "to(dtype)", function(d) return d.A:to(torch.float64), d.A:to("int32"), d.I:to(d.dev, torch.float32) end },
  { "double", function(d) return d.A:double(), d.A:float(), d.A:half(), d.A:bfloat16() end,
    covers = { "float", "half", "bfloat16" } },
  { "long", function(d) return d.A:long(), d.A:int(), d.A:short(), d.A:char(), d.B:byte(), d.A:bool() end,
    covers = { "int", "short", "char", "byte", "bool" } },
  { "type", function(d) return d.A:type(torch.float64), d.I:type("float32") end },
  { "type()", function(d) return d.A:type() end, covers = {},
    compare = function(ref, got, dev)
      assert.are.equal(dev.type == "cuda" and "torch.cuda.FloatTensor" or "torch.FloatTensor", got[1])
    end },
  { "cpu", function(d) return d.A:cpu() end, device = "cpu" },
  { "cuda", function(d) return d.A:cpu():cuda(d.dev.index) end,
    device = function(dev) return dev.type == "cuda" and dev or torch.device("cuda", 0) end },
  { "to(device)", function(d) return d.A:cpu():to(d.dev), d.A:to({ device = d.dev, dtype = torch.float64 }) end },
  { "item", function(d) return d.A[{ 2, 2 }]:item(), d.I[{ 1, 2 }]:item(), d.L[{ 1, 1 }]:item() end },
  { "tolist", function(d) return d.A:tolist(), d.I:t():tolist() end },

  -- ---- elementwise unary
  { "neg", function(d) return d.A:neg(), -d.A, d.I:neg() end, covers = { "negative" } },
  { "abs", function(d) return d.A:abs(), d.I:abs() end },
  { "exp", function(d) return d.A:exp() end },
  { "expm1", function(d) return d.A:expm1() end },
  { "erf", function(d) return d.A:erf() end },
  { "log", function(d) return d.P:log(), d.A:log() end }, -- NaN for negatives, on every device
  { "log1p", function(d) return d.P:log1p() end },
  { "sqrt", function(d) return d.P:sqrt() end },
  { "rsqrt", function(d) return d.P:rsqrt() end },
  { "sigmoid", function(d) return d.A:sigmoid() end },
  { "tanh", function(d) return d.A:tanh() end },
  { "relu", function(d) return d.A:relu(), d.I:relu() end },
  { "sin", function(d) return d.A:sin() end },
  { "cos", function(d) return d.A:cos() end },
  { "floor", function(d) return d.A:floor() end },
  { "ceil", function(d) return d.A:ceil() end },
  { "round", function(d) return d.A:round() end },
  { "trunc", function(d) return d.A:trunc() end },
  { "sign", function(d) return d.A:sign(), d.I:sign() end },
  { "reciprocal", function(d) return d.B:reciprocal() end },
  { "square", function(d) return d.A:square(), d.I:square() end },
  { "logical_not", function(d) return d.L:logical_not(), d.A:logical_not() end },
  { "clamp", function(d) return d.A:clamp(-1, 2), d.A:clamp(0), d.I:clamp(-1, 1) end, covers = { "clip" } },

  -- ---- elementwise binary, with broadcasting, scalars and promotion
  { "add", function(d) return d.A:add(d.B), d.A + d.row, 1 + d.A, d.I + d.A, d.A:add(d.B, { alpha = 2 }) end },
  { "sub", function(d) return d.A:sub(d.B), d.A - d.col, 2.5 - d.I end, covers = { "subtract" } },
  { "mul", function(d) return d.A:mul(d.B), d.A * 3, d.I * d.J, d.I * 0.5 end, covers = { "multiply" } },
  { "div", function(d) return d.A:div(d.B), d.A / 4, d.I / d.J, 1 / d.B end, covers = { "divide", "true_divide" } },
  { "floor_divide", function(d) return d.A:floor_divide(d.B), d.I // d.J, d.A // 2 end },
  { "remainder", function(d) return d.A:remainder(d.B), d.I % d.J, d.A % 2 end },
  { "pow", function(d) return d.B:pow(2), d.B ^ d.B, 2 ^ d.A, d.J:pow(2) end },
  { "maximum", function(d) return d.A:maximum(d.B), d.I:maximum(d.J) end },
  { "minimum", function(d) return d.A:minimum(d.B) end },
  { "eq", function(d) return d.A:eq(d.B), d.I:eq(d.J), d.A:eq(0.5) end },
  { "ne", function(d) return d.A:ne(d.B), d.I:ne(1) end },
  { "lt", function(d) return d.A:lt(d.B), d.A:lt(1) end, covers = { "less" } },
  { "le", function(d) return d.A:le(d.B) end },
  { "gt", function(d) return d.A:gt(d.B), d.I:gt(0) end, covers = { "greater" } },
  { "ge", function(d) return d.A:ge(d.B) end },
  { "logical_and", function(d) return d.L:logical_and(d.A:gt(0)) end },
  { "logical_or", function(d) return d.L:logical_or(d.A:gt(0)) end },
  { "half arithmetic", function(d) return d.A:half() + d.B:half(), d.A:bfloat16() * 2 end, covers = {},
    float_tol = 1e-2 },

  -- ---- in place: the result is the very same object
  { "add_", function(d)
      local x = d.A:clone()
      assert(rawequal(x:add_(d.row), x))
      x:sub_(1):mul_(d.B):div_(2)
      local y = d.B:clone()
      y:pow_(2):floor_divide_(0.5):remainder_(3)
      return x, y
    end, covers = { "sub_", "mul_", "div_", "pow_", "floor_divide_", "remainder_" } },
  { "unary_", function(d)
      local outs = {}
      for _, name in ipairs({ "abs_", "neg_", "exp_", "expm1_", "erf_", "sigmoid_", "tanh_", "relu_", "sin_", "cos_",
        "floor_", "ceil_", "round_", "trunc_", "sign_", "square_" }) do
        local x = d.A:clone()
        assert(rawequal(x[name](x), x))
        outs[#outs + 1] = x
      end
      for _, name in ipairs({ "log_", "log1p_", "sqrt_", "rsqrt_", "reciprocal_" }) do
        local x = d.P:clone()
        x[name](x)
        outs[#outs + 1] = x
      end
      local b = d.L:clone()
      b:logical_not_()
      outs[#outs + 1] = b
      return table.unpack(outs)
    end, covers = { "abs_", "neg_", "exp_", "expm1_", "erf_", "sigmoid_", "tanh_", "relu_", "sin_", "cos_", "floor_",
      "ceil_", "round_", "trunc_", "sign_", "square_", "log_", "log1p_", "sqrt_", "rsqrt_", "reciprocal_",
      "logical_not_" } },
  { "clamp_", function(d) local x = d.A:clone(); x:clamp_(-1, 1); return x end },
  { "fill_", function(d)
      local x = d.A:clone(); x:fill_(2.5)
      local y = d.I:clone(); y:t():narrow(1, 2, 1):fill_(9)
      return x, y
    end },
  { "zero_", function(d) local x = d.A:clone(); x:narrow(2, 2, 1):zero_(); return x end },
  { "copy_", function(d)
      local x = d.A:clone()
      x:copy_(d.B)
      local y = d.A:clone()
      y:copy_(d.I:t():t()) -- another dtype, strided
      local z = d.M1:clone()
      z:narrow(2, 1, 3):copy_(d.row) -- broadcast into a view
      return x, y, z
    end },

  -- ---- reductions
  { "sum", function(d) return d.A:sum(), d.A:sum(1), d.A:sum(2, true), d.I:sum(), d.L:sum(), d.BA:sum(-1) end },
  { "mean", function(d) return d.A:mean(), d.A:mean(2), d.BA:mean(1, true) end },
  { "prod", function(d) return d.A:prod(), d.A:prod(1), d.I:prod(2) end },
  { "max", function(d) return d.A:max(), d.A:max(2), d.BA:max(1, true) end },
  { "min", function(d) return d.A:min(), d.A:min(1), d.I:min(2) end },
  { "argmax", function(d) return d.A:argmax(), d.A:argmax(2), d.I:argmax(1, true) end },
  { "argmin", function(d) return d.A:argmin(), d.A:argmin(1) end },
  { "std", function(d) return d.A:std(), d.A:std(2), d.BA:std(3, true) end },
  { "var", function(d) return d.A:var(), d.A:var(1) end },
  { "norm", function(d) return d.A:norm(), d.A:norm(1), d.A:norm(math.huge) end },
  { "all", function(d) return d.L:all(), d.A:all(), d.A:gt(-5):all() end },
  { "any", function(d) return d.L:any(), d.A:gt(10):any() end },
  { "softmax", function(d) return d.A:softmax(2), d.A:softmax(1), d.BA:softmax(-1) end },
  { "log_softmax", function(d) return d.A:log_softmax(2), d.BA:log_softmax(2) end },
  { "equal", function(d) return d.A:equal(d.A:clone()), d.A:equal(d.B) end },
  { "allclose", function(d) return d.A:allclose(d.A + 1e-9), d.A:allclose(d.B), d.A:allclose(d.A + 0.01, 0, 0.1) end },

  -- ---- matrix products
  { "matmul", function(d)
      return d.M1:matmul(d.M2), d.v4:matmul(d.v4), d.M1:matmul(d.v4), d.BA:matmul(d.BB),
        d.BA:matmul(d.v4), d.A:t():matmul(d.A), d.D:matmul(d.D)
    end },
  { "mm", function(d) return d.M1:mm(d.M2), d.M2:t():mm(d.M1:t()) end },
  { "bmm", function(d) return d.BA:bmm(d.BB) end },

  -- ---- random: the same seed gives the same numbers on every device
  { "uniform_", function(d)
      torch.manual_seed(11)
      local x = d.A:clone(); x:uniform_(-2, 2)
      local y = d.D:clone(); y:uniform_()
      return x, y
    end },
  { "normal_", function(d)
      torch.manual_seed(12)
      local x = d.A:clone(); x:normal_(1, 3)
      local y = d.A:t():clone():t(); y:normal_() -- a strided target
      return x, y
    end },

  -- ---- autograd on the device
  { "backward", function(d)
      local x = d.A:clone():requires_grad_()
      local w = d.M1:narrow(1, 1, 3):narrow(2, 1, 2):clone():requires_grad_()
      local y = ((x:t():matmul(x:narrow(2, 1, 2)) * w):sum() + x:sigmoid():mean())
      y:backward()
      return y, x.grad, w.grad
    end, covers = { "requires_grad_" } },
  { "detach", function(d)
      local x = d.A:clone():requires_grad_()
      local y = (x * 2):detach()
      local z = (x * 3)
      z:detach_()
      return y, y.requires_grad, z.requires_grad
    end, covers = { "detach_" } },
  { "register_post_accumulate_grad_hook", function(d)
      local x = d.A:clone():requires_grad_()
      local seen
      x:register_post_accumulate_grad_hook(function(t) seen = t.grad:clone() end)
      local y = (x * x):sum() + (x * 3):sum()
      y:backward()
      return seen, x.grad
    end },

  -- ---- convolution (torch.conv2d / conv1d; not a tensor method)
  { "conv2d (and conv1d): output and every gradient", function(d)
      local x = d.BA:view(1, 2, 3, 4):clone():requires_grad_()          -- [1, 2, 3, 4]
      local w = d.BB:view(2, 2, 2, 5):clone():requires_grad_()          -- [2, 2, 2, 5]
      local b = d.row:narrow(1, 1, 2):clone():requires_grad_()
      local y = torch.conv2d(x, w, b, { padding = { 1, 2 }, stride = { 2, 1 } })
      y:backward(y:detach() * 0.5 + 1)
      local x1 = d.BA:clone():requires_grad_()                           -- [2, 3, 4]
      local w1 = d.BB:view(-1):narrow(1, 1, 12):view(2, 3, 2):clone():requires_grad_()
      local y1 = torch.conv1d(x1, w1, nil, { padding = "same", dilation = 2 })
      y1:sum():backward()
      return y, x.grad, w.grad, b.grad, y1, x1.grad, w1.grad
    end, covers = {} },
  -- ---- issue 20 (branch pool): pooling, batch norm, interpolate, pad;
  -- forward and every gradient, odd shapes
  { "max_pool2d", function(d)
      local x = d.BB:view(1, 2, 4, 5):clone():requires_grad_()
      local y, idx = torch.max_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true, return_indices = true })
      local z = torch.adaptive_max_pool2d(x, { 3, 2 })
      ;((y * y):sum() + (z * 3):sum()):backward()
      return y, idx, z, x.grad
    end, covers = {} },
  { "avg_pool2d", function(d)
      local x = d.BB:view(2, 1, 4, 5):clone():requires_grad_()
      local y = torch.avg_pool2d(x, { 3, 2 }, { stride = { 2, 3 }, padding = 1, count_include_pad = false })
      local z = torch.adaptive_avg_pool2d(x, { 3, 4 })
      ;((y * y):sum() + (z * z):sum()):backward()
      return y, z, x.grad
    end, covers = {} },
  { "batch_norm", function(d)
      local x = d.BB:view(2, 4, 5):clone():requires_grad_()
      local w = torch.tensor({ 1.0, 2.0, 0.5, -1.0 }, { device = d.dev }):requires_grad_()
      local b = torch.tensor({ 0.0, 0.5, -1.0, 2.0 }, { device = d.dev }):requires_grad_()
      local rm, rv = torch.zeros(4, { device = d.dev }), torch.ones(4, { device = d.dev })
      local y = torch.batch_norm(x, rm, rv, { weight = w, bias = b, training = true })
      local e = torch.batch_norm(x, rm, rv, { weight = w, bias = b })
      ;((y * y):sum() + (e * 3):sum()):backward()
      return y, e, rm, rv, x.grad, w.grad, b.grad
    end, covers = {} },
  { "interpolate", function(d)
      local x = d.BB:view(1, 2, 4, 5):clone():requires_grad_()
      local a = torch.interpolate(x, { size = { 7, 3 }, mode = "bilinear" })
      local b = torch.interpolate(x, { scale_factor = 1.5, mode = "bilinear", align_corners = true })
      local c = torch.interpolate(x, { size = { 3, 8 } })
      ;((a * a):sum() + (b * b):sum() + (c * 3):sum()):backward()
      return a, b, c, x.grad
    end, covers = {} },
  { "pad", function(d)
      local x = d.BA:clone():requires_grad_()
      local y = torch.pad(x, { 1, -1, 2, 0 }, { value = 0.5 })
      ;(y * y):sum():backward()
      return y, x.grad
    end, covers = {} },
}

-- torch.* functions that make or join tensors on a given device.
local FACTORIES = {
  { "ones", function(d) return torch.ones(2, 3, { device = d.dev }), torch.ones({ 4 }, { device = d.dev, dtype = torch.int64 }) end },
  { "zeros", function(d) return torch.zeros(3, 2, { device = d.dev, dtype = torch.float64 }) end },
  { "full", function(d) return torch.full({ 2, 2 }, 7, { device = d.dev }), torch.full({ 3 }, 1.5, { device = d.dev }) end },
  { "empty", function(d) return torch.empty(2, 3, { device = d.dev }):size() end },
  { "Tensor", function(d)
      local t = torch.with_device(d.dev, function() return torch.Tensor(2, 3) end)
      return t:size(), t.dtype, t.device == d.dev
    end },
  { "tensor", function(d) return torch.tensor({ { 1, 2 }, { 3, 4 } }, { device = d.dev }), torch.tensor(2.5, { device = d.dev }) end },
  { "arange", function(d) return torch.arange(5, { device = d.dev }), torch.arange(1, 2, 0.25, { device = d.dev }) end },
  { "linspace", function(d) return torch.linspace(0, 1, 5, { device = d.dev }) end },
  { "eye", function(d) return torch.eye(3, { device = d.dev }), torch.eye(2, 4, { device = d.dev }) end },
  { "rand", function(d)
      torch.manual_seed(1)
      return torch.rand(3, 4, { device = d.dev }), torch.rand(2, { device = d.dev, dtype = torch.float64 })
    end },
  { "randn", function(d) torch.manual_seed(2); return torch.randn(5, 3, { device = d.dev }) end },
  { "randint", function(d) torch.manual_seed(3); return torch.randint(0, 10, { 3, 3 }, { device = d.dev }) end },
  { "randperm", function(d) torch.manual_seed(4); return torch.randperm(8, { device = d.dev }) end },
  { "like", function(d)
      torch.manual_seed(5)
      return torch.zeros_like(d.A), torch.ones_like(d.I), torch.full_like(d.A, 3), torch.rand_like(d.A),
        torch.randn_like(d.D), torch.empty_like(d.A):size()
    end },
  { "cat", function(d) return torch.cat({ d.A, d.B }), torch.cat({ d.A, d.B, d.A }, 2), torch.cat({ d.A, d.I }) end },
  { "stack", function(d) return torch.stack({ d.A, d.B }), torch.stack({ d.A, d.B }, 3) end },
  { "addmm", function(d) return torch.addmm(d.row:narrow(1, 1, 2), d.M1:narrow(1, 1, 2), d.M2) end },
}

-- Methods that are not ops on data and need no device row.
local NOT_OPS = {}

-- ---------------------------------------------------------------- compare

local function is_tensor(v) return torch.is_tensor(v) end

-- A comparable picture of a result: tensors become {dtype, shape, values}
-- and remember their device; Sizes become strings; lists recurse.
local function picture(v, devices)
  if is_tensor(v) then
    devices[#devices + 1] = v.device
    return { tensor = true, dtype = tostring(v.dtype), shape = tostring(v.shape), values = v:tolist() }
  end
  if type(v) == "table" then
    local mt = getmetatable(v)
    if mt and mt.__name == "torch.Size" then return tostring(v) end
    if mt and mt.__tostring and not mt.__index then return tostring(v) end
    local t = {}
    for k, x in pairs(v) do t[k] = picture(x, devices) end
    return t
  end
  if type(v) == "userdata" then return tostring(v) end
  return v
end

-- a equals b: exactly (tol == 0; integer and float kinds must match too),
-- or with relative tolerance tol for floats. NaN equals NaN.
local function same(a, b, tol, path)
  if type(a) ~= type(b) then return false, path .. ": " .. type(a) .. " vs " .. type(b) end
  if type(a) == "table" then
    for k, x in pairs(a) do
      local ok, why = same(x, b[k], tol, path .. "." .. tostring(k))
      if not ok then return false, why end
    end
    for k in pairs(b) do if a[k] == nil then return false, path .. "." .. tostring(k) .. " missing" end end
    return true
  end
  if type(a) == "number" then
    if a ~= a then return b ~= b, path .. ": NaN vs " .. tostring(b) end
    if tol == 0 then
      return a == b and math.type(a) == math.type(b), path .. ": " .. tostring(a) .. " vs " .. tostring(b)
    end
    if a == b then return true end
    return math.abs(a - b) <= tol * (1 + math.abs(a)), path .. ": " .. tostring(a) .. " vs " .. tostring(b)
  end
  return a == b, path .. ": " .. tostring(a) .. " vs " .. tostring(b)
end

local function run_row(row, dev)
  local d = inputs(dev)
  local res = table.pack(row[2](d))
  local devices = {}
  local pics = {}
  for i = 1, res.n do pics[i] = picture(res[i], devices) end
  return pics, devices
end

local function check_row(row, dev, simulated)
  local ref = run_row(row, torch.device("cpu"))
  local got, devices = run_row(row, dev)
  if row.compare then return row.compare(ref, got, dev) end
  local tol = simulated and 0 or (row.float_tol or 1e-5)
  local ok, why = same(ref, got, tol, row[1])
  assert(ok, "results on " .. tostring(dev) .. " differ from the cpu's: " .. tostring(why))
  local want = row.device == "cpu" and torch.device("cpu")
    or type(row.device) == "function" and row.device(dev) or dev
  for _, got_dev in ipairs(devices) do
    assert(got_dev == want, row[1] .. ": a result is on " .. tostring(got_dev) .. ", expected " .. tostring(want))
  end
end

-- ---------------------------------------------------------------- specs

local saved_n, saved_cap

describe("every op on every device", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  it("has a row for every tensor method", function()
    local covered = {}
    for _, row in ipairs(OPS) do
      covered[row[1]:match("^[%w_]+")] = true
      for _, c in ipairs(row.covers or {}) do covered[c] = true end
    end
    local missing = {}
    for name in pairs(torch._methods) do
      if not covered[name] and not NOT_OPS[name] then missing[#missing + 1] = name end
    end
    table.sort(missing)
    assert(#missing == 0, "methods with no row in spec/device_ops_spec.lua (add one per op): " .. table.concat(missing, ", "))
  end)

  for _, ordinal in ipairs({ 0, 1 }) do
    describe("simulated cuda:" .. ordinal, function()
      for _, row in ipairs(OPS) do
        it(row[1], function() check_row(row, torch.device("cuda", ordinal), true) end)
      end
      for _, row in ipairs(FACTORIES) do
        it("torch." .. row[1], function()
          assert(torch[row[1]] or row[1] == "like", "torch." .. row[1] .. " is missing")
          check_row(row, torch.device("cuda", ordinal), true)
        end)
      end
    end)
  end

  describe("real CUDA devices", function()
    it("agree with the cpu on every op (when the machine has a GPU)", function()
      torch._sim_configure(0)
      local ok, err = pcall(function()
        local n = torch.cuda.device_count()
        if n == 0 then return "none" end
        for i = 0, n - 1 do
          for _, row in ipairs(OPS) do check_row(row, torch.device("cuda", i), false) end
          for _, row in ipairs(FACTORIES) do
            if torch[row[1]] or row[1] == "like" then check_row(row, torch.device("cuda", i), false) end
          end
        end
      end)
      collectgarbage(); collectgarbage()
      torch._sim_configure(2)
      assert(ok, err)
      if err == "none" then pending("no real CUDA device on this machine") end
    end)
  end)

  it("softmax gives probabilities (rows sum to 1) on every device", function()
    for _, dev in ipairs({ "cpu", "cuda:0", "cuda:1" }) do
      local s = inputs(torch.device(dev)).A:softmax(2):sum(2)
      assert(s:allclose(torch.ones(2, { device = dev })), "softmax on " .. dev .. " gave row sums " .. tostring(s))
    end
  end)

  it("an op on a device keeps a view's device and shares its storage", function()
    local d = inputs(torch.device("cuda:1"))
    local v = d.A:t()
    v[{ 1, 1 }] = 100
    assert.are.equal(100, d.A[{ 1, 1 }]:item())
    assert.are.equal(torch.device("cuda:1"), v.device)
  end)

  it("mixing devices in one op is an error naming both devices", function()
    local a, b = torch.ones(2, { device = "cuda:0" }), torch.ones(2, { device = "cuda:1" })
    local c = torch.ones(2)
    local msg01 = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!"
    local function err(f) local ok, e = pcall(f); assert.is_false(ok); return (tostring(e):gsub("^.-:%d+: ", "")) end
    assert.are.equal(msg01, err(function() return a + b end))
    assert.are.equal(msg01, err(function() return a:mul(b) end))
    assert.are.equal(msg01, err(function() return a:eq(b) end))
    assert.are.equal(msg01, err(function() return a:add_(b) end))
    assert.are.equal(msg01, err(function() return torch.cat({ a, b }) end))
    assert.are.equal(msg01, err(function() return torch.stack({ a, b }) end))
    assert.are.equal(msg01, err(function() return a:view(2, 1):matmul(b:view(1, 2)) end))
    assert.are.equal(msg01, err(function() return a:index_select(1, torch.tensor({ 1 }, { device = "cuda:1" })) end))
    assert.are.equal("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
      err(function() return c + a end))
    -- copy_ may cross devices
    local t = torch.zeros(2, { device = "cuda:1" })
    t:copy_(torch.tensor({ 3.0, 4.0 }, { device = "cuda:0" }))
    assert.are.same({ 3.0, 4.0 }, t:tolist())
    assert.are.equal(torch.device("cuda:1"), t.device)
  end)
end)
