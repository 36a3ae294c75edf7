-- op_layer_spec.lua: rules that live once in the engine's op layer and so
-- hold for every binding that reaches it: the in-place guard on every
-- in-place method, one bounds message for every way of selecting an
-- element, one requires_grad rule for every way of setting it, and views
-- recorded for autograd whichever method made them.
local torch = require("torch")
local H = require("helpers")

local LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
local VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."

-- Every in-place method the tensor has (name ends in "_"), with arguments
-- it accepts; detach_ and requires_grad_ change flags, not values.
local function inplace_methods()
  local args = {
    copy_ = function() return torch.full({ 2, 3 }, 0.25) end,
    fill_ = function() return 0.5 end,
    clamp_ = function() return 0, 0.5 end,
    masked_fill_ = function() return torch.tensor({ true, false, true }), 0.5 end,
  }
  local list = {}
  for name in pairs(torch._methods) do
    if name:sub(-1) == "_" and name ~= "detach_" and name ~= "requires_grad_" then
      list[#list + 1] = { name = name, args = args[name] or function() return 2 end }
    end
  end
  table.sort(list, function(a, b) return a.name < b.name end)
  return list
end

describe("the in-place guard", function()
  it("covers every in-place method (there are many of them)", function()
    assert.is_true(#inplace_methods() >= 30)
  end)

  it("refuses every in-place method on a leaf that requires grad, leaving it unchanged", function()
    for _, m in ipairs(inplace_methods()) do
      local x = torch.tensor({ { 1.5, 2, 3 }, { 4, 5, 6 } }, { requires_grad = true })
      local snap = H.snapshot(x)
      H.errors(function() x[m.name](x, m.args()) end, LEAF)
      H.assert_unchanged(x, snap)
      assert.is_nil(x.grad_fn, m.name)
    end
  end)

  it("refuses every in-place method on a view of such a leaf", function()
    for _, m in ipairs(inplace_methods()) do
      local x = torch.tensor({ { 1.5, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }, { requires_grad = true })
      local snap = H.snapshot(x)
      local v = x:narrow(1, 2, 2)
      H.errors(function() v[m.name](v, m.args()) end, VIEW_OF_LEAF)
      H.assert_unchanged(x, snap)
    end
  end)

  it("refuses a view of a view of a leaf, and indexed assignment into a leaf", function()
    local x = torch.ones(3, 4, { requires_grad = true })
    H.errors(function() x:t():select(1, 2):add_(1) end, VIEW_OF_LEAF)
    H.errors(function() x[2] = 3 end, VIEW_OF_LEAF)
    H.errors(function() x[{ 2, { 1, 2 } }] = torch.zeros(2) end, VIEW_OF_LEAF)
    H.assert_list_equal(x:tolist(), torch.ones(3, 4):tolist())
  end)

  it("records in-place methods on results inside the graph, as PyTorch (spec/inplace_autograd_spec.lua)", function()
    local x = torch.ones(2, 2, { requires_grad = true })
    local y = x * 2
    y:mul_(3)
    assert.are.equal("<MulBackward0>", tostring(y.grad_fn))
    y:t():mul_(3)
    assert.are.equal("<CopySlices>", tostring(y.grad_fn))
    y:sum():backward()
    assert.are.same({ { 18.0, 18.0 }, { 18.0, 18.0 } }, x.grad:tolist())
  end)

  it("lets every in-place method run under no_grad and on tensors outside the graph", function()
    -- a method may still refuse for its own reasons (logical_not_ cannot
    -- write bools into a float tensor), never for the guard's
    local function not_guarded(f)
      local ok, err = pcall(f)
      if not ok then assert.is_nil(tostring(err):find("in-place operation", 1, true), err) end
    end
    for _, m in ipairs(inplace_methods()) do
      local x = torch.tensor({ { 1.5, 2, 3 }, { 4, 5, 6 } }, { requires_grad = true })
      not_guarded(function() torch.no_grad(function() x[m.name](x, m.args()) end) end)
      local plain = torch.tensor({ { 1.5, 2, 3 }, { 4, 5, 6 } })
      not_guarded(function() plain[m.name](plain, m.args()) end)
    end
    local y = torch.ones(2)
    y:add_(1)
    assert.are.same({ 2.0, 2.0 }, y:tolist())
    local x = torch.ones(2, { requires_grad = true })
    torch.no_grad(function() x[1] = 5 end)
    assert.are.same({ 5.0, 1.0 }, x:tolist())
  end)
end)

describe("one bounds check for selecting an element", function()
  local x = torch.arange(12):view(3, 4)
  local MSG = "index 5 is out of range for dimension 2 of size 4 (expected 1 to 4, or -4 to -1)"

  it("x:select, x[{i, j}] and the dim named as the user counts it", function()
    H.errors(function() return x:select(2, 5) end, MSG)
    H.errors(function() return x[{ 1, 5 }] end, MSG)
    H.errors(function() return x:select(1, 4) end, "index 4 is out of range for dimension 1 of size 3")
    H.errors(function() return x[4] end, "index 4 is out of range for dimension 1 of size 3")
  end)

  it("reports a 0 and a negative index as written", function()
    H.errors(function() return x:select(2, 0) end, "index 0 is out of range for dimension 2 of size 4")
    H.errors(function() return x[{ 1, 0 }] end, "index 0 is out of range for dimension 2 of size 4")
    H.errors(function() return x:select(1, -4) end, "index -4 is out of range for dimension 1 of size 3")
    H.errors(function() return x[-4] end, "index -4 is out of range for dimension 1 of size 3")
  end)

  it("in range, 1-based and negative positions select the same element everywhere", function()
    assert.are.same({ 4, 5, 6, 7 }, x:select(1, 2):tolist())
    assert.are.same({ 4, 5, 6, 7 }, x[2]:tolist())
    assert.are.same({ 8, 9, 10, 11 }, x:select(1, -1):tolist())
    assert.are.equal(7, x[{ 2, -1 }]:item())
    assert.are.same({ 3, 7, 11 }, x:select(2, -1):tolist())
  end)

  it("narrow takes a negative start and reports a 0 start as written", function()
    assert.are.same({ { 8, 9, 10, 11 } }, x:narrow(1, -1, 1):tolist())
    H.errors(function() return x:narrow(1, 0, 1) end, { "start 0", "start must be >= 1" })
    H.errors(function() return x:narrow(1, -4, 1) end, { "start -4", "dimension 1 of size 3" })
  end)
end)

describe("one requires_grad rule", function()
  local MSG = "only Tensors of floating point dtype can require gradients (got int64)"

  it("is the same whichever way it is set", function()
    H.errors(function() torch.ones(2, { dtype = torch.int64, requires_grad = true }) end, MSG)
    H.errors(function() torch.tensor({ 1, 2 }):requires_grad_() end, MSG)
    H.errors(function() torch.tensor({ 1, 2 }).requires_grad = true end, MSG)
  end)

  it("only leaves may change it", function()
    local y = torch.ones(2, { requires_grad = true }) * 2
    local LEAVES = "you can only change requires_grad flags of leaf variables."
    H.errors(function() y:requires_grad_(false) end, LEAVES)
    H.errors(function() y.requires_grad = false end, LEAVES)
    y:detach_()
    assert.is_false(y.requires_grad)
    assert.is_nil(y.grad_fn)
  end)
end)

describe("views are recorded by the op layer", function()
  it("every view method gives its PyTorch grad_fn and routes the gradient back", function()
    local cases = {
      { "ViewBackward0", function(x) return x:view(6) end },
      { "ViewBackward0", function(x) return x:reshape(3, 2) end },
      { "ViewBackward0", function(x) return x:flatten() end },
      { "TBackward0", function(x) return x:t() end },
      { "TransposeBackward0", function(x) return x:transpose(1, 2) end },
      { "PermuteBackward0", function(x) return x:permute(2, 1) end },
      { "PermuteBackward0", function(x) return x.T end },
      { "UnsqueezeBackward0", function(x) return x:unsqueeze(1) end },
      { "SqueezeBackward0", function(x) return x:unsqueeze(1):squeeze(1) end },
      { "ExpandBackward0", function(x) return x:unsqueeze(1):expand(4, 2, 3) end },
      { "SelectBackward0", function(x) return x:select(2, 2) end },
      { "SelectBackward0", function(x) return x[2] end },
      { "SliceBackward0", function(x) return x:narrow(2, 2, 2) end },
      { "SliceBackward0", function(x) return x[{ {}, { 2, 3 } }] end },
      { "SliceBackward0", function(x) return x:split(1, 2)[3] end },
    }
    for _, c in ipairs(cases) do
      local x = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { dtype = torch.float64, requires_grad = true })
      local y = c[2](x)
      assert.are.equal("<" .. c[1] .. ">", y.grad_fn)
      -- d(sum(y * w))/dx with w = 1..n laid over y: compare with the same
      -- view of a tensor of weights taken without autograd
      local w = torch.arange(1, y:numel() + 1, { dtype = torch.float64 }):view(y.shape)
      ;(y * w):sum():backward()
      local expect = torch.zeros(2, 3, { dtype = torch.float64 })
      local ids = torch.arange(1, 7, { dtype = torch.float64 }):view(2, 3)
      local picked = c[2](ids) -- which input element each output element is
      for i, id in ipairs(picked:reshape(-1):tolist()) do
        id = math.tointeger(id)
        local r, col = (id - 1) // 3 + 1, (id - 1) % 3 + 1
        expect[{ r, col }] = expect[{ r, col }]:item() + w:reshape(-1)[i]:item()
      end
      H.assert_list_equal(x.grad:tolist(), expect:tolist())
    end
  end)

  it("records nothing under no_grad or for inputs that need no grad", function()
    local x = torch.ones(2, 3, { requires_grad = true })
    torch.no_grad(function() assert.is_nil(x:t().grad_fn) end)
    assert.is_nil(torch.ones(2, 3):select(1, 1).grad_fn)
  end)
end)

describe("each op family is declared once", function()
  -- PyTorch's names, written out here as the reference the lists must match
  local UNARY = {
    neg = "NegBackward0", abs = "AbsBackward0", exp = "ExpBackward0", log = "LogBackward0",
    sqrt = "SqrtBackward0", rsqrt = "RsqrtBackward0", sigmoid = "SigmoidBackward0", tanh = "TanhBackward0",
    relu = "ReluBackward0", sin = "SinBackward0", cos = "CosBackward0", floor = "FloorBackward0",
    ceil = "CeilBackward0", round = "RoundBackward0", trunc = "TruncBackward0", sign = "SignBackward0",
    reciprocal = "ReciprocalBackward0", log1p = "Log1PBackward0", expm1 = "Expm1Backward0",
    square = "PowBackward0", erf = "ErfBackward0",
  }
  local BINARY = { mul = "MulBackward0", div = "DivBackward0", pow = "PowBackward1" }
  local NO_INPLACE = { "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or" }

  it("every unary op has its method, its in-place form, its grad_fn and its value", function()
    local x = torch.tensor({ 0.25, 0.5 }, { dtype = torch.float64, requires_grad = true })
    for name, grad in pairs(UNARY) do
      local y = x[name](x)
      assert.are.equal("<" .. grad .. ">", y.grad_fn, name)
      assert.is_function(x[name .. "_"], name .. "_")
      -- the kernel behind the name computes that function (math.* as reference)
      local ref = math[name] and math[name](0.25)
      if ref and name ~= "abs" then H.assert_close(y:tolist()[1], ref, 1e-12, 0, name) end
    end
    H.assert_close(x:rsqrt():tolist()[1], 2, 1e-12, 0)
    H.assert_close(x:reciprocal():tolist()[1], 4, 1e-12, 0)
    H.assert_close(x:square():tolist()[1], 0.0625, 1e-12, 0)
    H.assert_close(x:expm1():tolist()[1], math.exp(0.25) - 1, 1e-12, 0)
    local n = x:logical_not()
    assert.is_nil(n.grad_fn)
    assert.are.same({ false, false }, n:tolist())
  end)

  it("every binary op has its method and kernel; the arithmetic ones an in-place form", function()
    local a = torch.tensor({ 7.0, -7.0 }, { requires_grad = true })
    local b = torch.tensor({ 2.0, 2.0 })
    for name, grad in pairs(BINARY) do assert.are.equal("<" .. grad .. ">", a[name](a, b).grad_fn, name) end
    assert.are.equal("<AddBackward0>", (a + b).grad_fn)
    assert.are.equal("<SubBackward0>", (a - b).grad_fn)
    local x, y = torch.tensor({ 7, -7 }), torch.tensor({ 2, 3 })
    assert.are.same({ 3, -3 }, x:floor_divide(y):tolist())
    assert.are.same({ 1, 2 }, x:remainder(y):tolist())
    assert.are.same({ 49, -343 }, x:pow(y):tolist())
    assert.are.same({ 7, 3 }, x:maximum(y):tolist())
    assert.are.same({ 2, -7 }, x:minimum(y):tolist())
    assert.are.same({ false, false }, x:eq(y):tolist())
    assert.are.same({ true, true }, x:ne(y):tolist())
    assert.are.same({ false, true }, x:lt(y):tolist())
    assert.are.same({ false, true }, x:le(y):tolist())
    assert.are.same({ true, false }, x:gt(y):tolist())
    assert.are.same({ true, false }, x:ge(y):tolist())
    assert.are.same({ true, true }, x:logical_and(y):tolist())
    assert.are.same({ true, true }, x:logical_or(y):tolist())
    for _, name in ipairs({ "add_", "sub_", "mul_", "div_", "floor_divide_", "remainder_", "pow_" }) do
      assert.is_function(x[name], name)
    end
    -- (reading a name a tensor lacks is an error, issue 22 item 5)
    for _, name in ipairs(NO_INPLACE) do assert.is_nil(torch._methods[name .. "_"], name .. "_") end
  end)

  it("every reduction has its method and its name in messages", function()
    for _, name in ipairs({ "sum", "prod", "max", "min", "argmax", "argmin" }) do
      assert.is_function(torch.ones(2)[name], name)
    end
    H.errors(function() return torch.zeros(0):argmax() end, "argmax(): Expected reduction dim")
    H.errors(function() return torch.zeros(2, 0):min(2) end, "min(): Expected reduction dim 2")
  end)

  it("the placement log names each op by its declared name", function()
    local out = H.run_lua([[
      local torch = require("torch")
      local x, y = torch.tensor({ 7, -7 }), torch.tensor({ 2, 3 })
      torch.set_log_device_placement(true)
      local _ = x:floor_divide(y), x:logical_or(y), x:float():expm1(), x:logical_not(), x:argmin()
      torch.set_log_device_placement(false)
    ]])
    for _, name in ipairs({ "floor_divide", "logical_or", "expm1", "logical_not", "argmin" }) do
      assert.matches("Executing op " .. name .. " in device cpu\n", out, nil, true)
    end
  end)
end)

-- Rules that used to be checked by the Lua bindings and now live in the
-- engine (gs_autograd_scalars.c, gs_op_*.c): each holds with its one
-- message whichever way the op is reached.
describe("rules the engine holds for numbers, counts and assignments", function()
  local ALPHA = "For integral input tensors, argument alpha must not be a floating point number."

  it("add/sub's alpha: integers stay integers, a float alpha on integral operands is refused", function()
    local x = torch.tensor({ 1, 2 })
    -- PyTorch: torch.add(tensor([1, 2]), 2, alpha=3) is tensor([7, 8]) (int64)
    H.check(x:add(2, 3), "int64", { 2 }, { 7, 8 })
    H.check(x:sub(2, { alpha = 3 }), "int64", { 2 }, { -5, -4 })
    H.check(x:add(torch.tensor({ 1, 1 }), 3), "int64", { 2 }, { 4, 5 })
    H.check(torch.add(2, x, 3), "int64", { 2 }, { 5, 8 })
    local y = x:clone()
    assert.is_true(rawequal(y:add_(2, 3), y))
    H.check(y, "int64", { 2 }, { 7, 8 })
    y:sub_(torch.tensor({ 1, 1 }), 2)
    H.check(y, "int64", { 2 }, { 5, 6 })
    H.errors(function() return x:add(torch.tensor({ 1, 1 }), 2.5) end, ALPHA)
    H.errors(function() return x:add(2, 1.0) end, ALPHA)
    H.errors(function() return torch.add(2, x, 0.5) end, ALPHA)
    local snap = H.snapshot(y)
    H.errors(function() return y:add_(1, 1.5) end, ALPHA)
    H.errors(function() return y:sub_(torch.tensor({ 1, 1 }), 1.5) end, ALPHA)
    H.assert_unchanged(y, snap)
    -- a float operand on either side allows a float alpha: 1 + 0.5 * 2.5
    H.check(x:add(2.5, 0.5), "float32", { 2 }, { 2.25, 3.25 })
    H.check(torch.tensor({ 1.0 }):add(torch.tensor({ 2 }), 0.5), "float32", { 1 }, { 2.0 })
  end)

  it("add with alpha records alpha * g for the scaled operand", function()
    local a = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local b = torch.tensor({ 3.0, 4.0 }, { requires_grad = true })
    a:sub(b, 2.5):sum():backward()
    H.check(a.grad, "float32", { 2 }, { 1.0, 1.0 })
    H.check(b.grad, "float32", { 2 }, { -2.5, -2.5 })
  end)

  it("clamp needs a bound; a float bound promotes an integer tensor", function()
    local x = torch.tensor({ 1, 2, 3 })
    local NONE = "torch.clamp: At least one of 'min' or 'max' must not be None"
    H.errors(function() return x:clamp() end, NONE)
    H.errors(function() return x:clamp({}) end, NONE)
    H.errors(function() return x:clamp(nil, nil) end, NONE)
    local snap = H.snapshot(x)
    H.errors(function() return x:clamp_() end, NONE)
    H.assert_unchanged(x, snap)
    H.check(x:clamp(2), "int64", { 3 }, { 2, 2, 3 })
    H.check(x:clamp({ max = 2 }), "int64", { 3 }, { 1, 2, 2 })
    H.check(x:clamp(nil, 1.5), "float32", { 3 }, { 1.0, 1.5, 1.5 })
    H.check(x:clamp({ min = 1.5, max = 2 }), "float32", { 3 }, { 1.5, 2.0, 2.0 })
    H.check(x:clone():clamp_(2, 2), "int64", { 3 }, { 2, 2, 2 })
  end)

  it("item() reads exactly one element, as a number of the tensor's kind", function()
    local COUNT = "cannot be converted to Scalar (item() needs exactly one element)"
    H.errors(function() return torch.zeros(2):item() end, { "a Tensor with 2 elements", COUNT })
    H.errors(function() return torch.zeros(0):item() end, { "a Tensor with 0 elements", COUNT })
    assert.are.equal("integer", math.type(torch.tensor({ { 7 } }):item()))
    assert.are.equal(7, torch.tensor({ { 7 } }):item())
    assert.are.equal("float", math.type(torch.tensor(2.5, { dtype = torch.float64 }):item()))
    assert.are.equal(2.5, torch.tensor(2.5, { dtype = torch.float64 }):item())
    assert.are.equal(true, torch.tensor({ true }):item())
    assert.are.equal(-3, torch.tensor(-3, { dtype = torch.int8 }):item())
  end)

  it("#x needs a dimension", function()
    H.errors(function() return #torch.tensor(3) end, "len() of a 0-d tensor")
    assert.are.equal(4, #torch.zeros(4, 2))
  end)

  it("nll_loss takes integer class indices, counted from 1", function()
    local logp = torch.tensor({ { -1, -2, -3 }, { -4, -5, -6 } })
    local MSG = "nll_loss: expected integer class indices (1-based) as target, got "
    H.errors(function() return torch.nll_loss(logp, torch.tensor({ 1.0, 2.0 })) end, MSG .. "float32")
    H.errors(function() return torch.nll_loss(logp, torch.tensor({ true, false })) end, MSG .. "bool")
    -- -(logp[1][1] + logp[2][3]) / 2 = (1 + 6) / 2
    H.check(torch.nll_loss(logp, torch.tensor({ 1, 3 })), "float32", {}, 3.5)
    H.check(torch.nll_loss(logp, torch.tensor({ 1, 3 }, { dtype = torch.int8 })), "float32", {}, 3.5)
  end)

  it("x.data = y takes y's storage, dtype, shape and device; a tensor that requires grad stays floating", function()
    local x = torch.zeros(3, { requires_grad = true })
    H.errors(function() x.data = torch.arange(4) end,
      "data set to a tensor that requires gradients must be floating point, got int64")
    H.check(x, "float32", { 3 }, { 0.0, 0.0, 0.0 })
    assert.is_true(x.requires_grad)
    local y = torch.tensor({ { 1.0, 2.0 } }, { dtype = torch.float64 })
    x.data = y
    H.check(x, "float64", { 1, 2 }, { { 1.0, 2.0 } })
    y[{ 1, 1 }] = 5 -- one storage
    assert.are.equal(5, x[{ 1, 1 }]:item())
    local n = torch.zeros(2)
    n.data = torch.arange(3) -- no grad: any dtype, as in PyTorch
    H.check(n, "int64", { 3 }, { 0, 1, 2 })
  end)

  it("post-accumulate-grad hooks only on leaves that require grad", function()
    local MSG = "post accumulate grad hooks cannot be registered on non-leaf tensors or tensors that do not require grad"
    local fn = function() end
    H.errors(function() torch.ones(2):register_post_accumulate_grad_hook(fn) end, MSG)
    local w = torch.ones(2, { requires_grad = true })
    H.errors(function() w:mul(2):register_post_accumulate_grad_hook(fn) end, MSG)
    local seen = 0
    local h = w:register_post_accumulate_grad_hook(function() seen = seen + 1 end)
    w:mul(3):sum():backward()
    assert.are.equal(1, seen)
    h:remove()
    w:mul(3):sum():backward()
    assert.are.equal(1, seen)
  end)

  it("factories: rand's dtype, eye's sizes and arange's steps, one message each", function()
    H.errors(function() return torch.rand(2, { dtype = torch.int64 }) end, "rand: expected a floating point dtype, got int64")
    H.errors(function() return torch.randn(2, { dtype = torch.bool }) end, "randn: expected a floating point dtype, got bool")
    H.errors(function() return torch.eye(-1) end, "torch.eye: n and m must be non-negative, got -1 and -1")
    H.errors(function() return torch.eye(2, -3) end, "torch.eye: n and m must be non-negative, got 2 and -3")
    local big = math.maxinteger
    -- the exact int64 path (bounds beyond 2^53) says what the double path says
    H.errors(function() return torch.arange(big - 3, big, 0) end, "arange: step must be nonzero")
    H.errors(function() return torch.arange(big, big - 3) end, "arange: upper bound and larger bound inconsistent with step sign")
    H.check(torch.arange(big - 3, big, 2), "int64", { 2 }, { big - 3, big - 1 })
  end)

  it("sizes: the engine names a negative one's position, in a table or as numbers", function()
    H.errors(function() return torch.zeros({ 2, -1 }) end, "negative dimension -1 in size at position 2")
    H.errors(function() return torch.zeros(2, 3, -4) end, "negative dimension -4 in size at position 3")
  end)

  it("the dimensions limit is one rule (16) for every way of making a shape", function()
    local MSG = "tensors may have at most 16 dimensions, got 17"
    local ones = {}
    for i = 1, 17 do ones[i] = 1 end
    local x = torch.zeros(1)
    H.errors(function() return torch.zeros(ones) end, MSG)
    H.errors(function() return torch.zeros(table.unpack(ones)) end, MSG)
    H.errors(function() return x:view(ones) end, MSG)
    H.errors(function() return x:view(table.unpack(ones)) end, MSG)
    H.errors(function() return x:reshape(ones) end, MSG)
    H.errors(function() return x:expand(ones) end, MSG)
    H.errors(function() return x:expand(table.unpack(ones)) end, MSG)
    local x16 = torch.zeros(table.unpack(ones, 1, 16))
    assert.are.equal(16, x16:dim())
    H.errors(function() return x16:unsqueeze(1) end, MSG)
  end)
end)

describe("pin_memory's rule lives in the engine", function()
  teardown(function() H.release_gpus() end)

  it("pins a copy of a cpu tensor once, and refuses a tensor on a GPU", function()
    local x = torch.tensor({ 1.5, 2.5 })
    local p = x:pin_memory()
    assert.is_true(p:is_pinned())
    assert.is_false(x:is_pinned())
    assert.is_true(rawequal(p:pin_memory(), p))
    H.check(p, "float32", { 2 }, { 1.5, 2.5 })
    if not H.gpus(1) then return pending("needs a CUDA device") end
    local g = torch.ones(2, { device = "cuda:0" })
    H.errors(function() return g:pin_memory() end, "pin_memory: only CPU tensors can be pinned, this one is on cuda:0")
  end)
end)
