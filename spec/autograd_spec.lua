-- autograd_spec.lua: every differentiable op's gradient against central
-- finite differences in float64, plus the autograd semantics (leaves,
-- accumulation, no_grad, detach, in-place refusal, error messages).
local torch = require("torch")

local H = require("helpers")
local gradcheck = H.gradcheck

local function leaf(t) return t:double():requires_grad_() end
local function pos(...) return leaf(torch.rand(...) + 0.5) end     -- values in [0.5, 1.5)
local function any(...) return leaf(torch.randn(...)) end
-- values kept away from kinks (0 for relu/abs) so differences are smooth
local function away(...)
  local t = torch.rand(...) + 0.2
  local sign = torch.rand(...):gt(0.5):double() * 2 - 1
  return leaf(t * sign)
end

describe("gradients match finite differences", function()
  before_each(function() torch.manual_seed(7) end)

  local unary = {
    neg = any, abs = away, exp = any, log = pos, sqrt = pos, rsqrt = pos, sigmoid = any,
    tanh = any, relu = away, sin = any, cos = any, reciprocal = pos, log1p = pos, expm1 = any,
    square = any, erf = any,
  }
  for name, make in pairs(unary) do
    it("of " .. name, function()
      gradcheck(function(x) return x[name](x) end, { make(3, 4) })
    end)
  end

  it("of clamp inside and outside the bounds", function()
    gradcheck(function(x) return x:clamp(-0.5, 0.5) end, { away(4, 5) })
  end)

  it("of + - * / between tensors, with broadcasting", function()
    local a, b = any(3, 4), pos(4)
    gradcheck(function(x, y) return x + y end, { a, b })
    gradcheck(function(x, y) return x - y end, { a, b })
    gradcheck(function(x, y) return x * y end, { a, b })
    gradcheck(function(x, y) return x / y end, { a, b })
    gradcheck(function(x, y) return y / x end, { pos(2, 1), pos(2, 3) })
  end)

  it("of pow with a tensor exponent and with number exponents", function()
    gradcheck(function(x, y) return x ^ y end, { pos(3), any(3) })
    gradcheck(function(x) return x ^ 3 end, { any(5) })
    gradcheck(function(x) return x ^ 2 end, { any(5) })
    gradcheck(function(x) return x ^ 0.5 end, { pos(5) })
    gradcheck(function(x) return 2 ^ x end, { any(5) })
  end)

  it("of operators with a number on either side", function()
    local x = any(2, 3)
    gradcheck(function(t) return 3 - t end, { x })
    gradcheck(function(t) return t - 3 end, { x })
    gradcheck(function(t) return 2.5 * t end, { x })
    gradcheck(function(t) return t / 4 end, { x })
    gradcheck(function(t) return 2 / t end, { pos(2, 3) })
    gradcheck(function(t) return -t + 1 end, { x })
  end)

  it("of add and sub with alpha", function()
    gradcheck(function(a, b) return a:add(b, 3) end, { any(3), any(3) })
    gradcheck(function(a, b) return a:sub(b, { alpha = 2 }) end, { any(3), any(3) })
  end)

  it("of sum and mean, whole and per dim, with and without keepdim", function()
    local x = any(3, 4)
    gradcheck(function(t) return t:sum() end, { x })
    gradcheck(function(t) return t:sum(1) end, { x })
    gradcheck(function(t) return t:sum(2, true) end, { x })
    gradcheck(function(t) return t:mean() end, { x })
    gradcheck(function(t) return t:mean(-1) end, { x })
    gradcheck(function(t) return t:mean(1, true) end, { x })
  end)

  it("of softmax and log_softmax along each dim", function()
    gradcheck(function(t) return t:softmax(2) end, { any(3, 4) })
    gradcheck(function(t) return t:softmax(1) end, { any(3, 4) })
    gradcheck(function(t) return t:log_softmax(2) end, { any(3, 4) })
    gradcheck(function(t) return t:log_softmax(1) end, { any(2, 3, 4) })
  end)

  it("of matmul in every shape combination", function()
    gradcheck(function(a, b) return a:matmul(b) end, { any(3), any(3) })
    gradcheck(function(a, b) return a:matmul(b) end, { any(2, 3), any(3) })
    gradcheck(function(a, b) return a:matmul(b) end, { any(3), any(3, 2) })
    gradcheck(function(a, b) return a:matmul(b) end, { any(2, 3), any(3, 4) })
    gradcheck(function(a, b) return a:matmul(b) end, { any(2, 2, 3), any(3, 4) })
    gradcheck(function(a, b) return a:matmul(b) end, { any(2, 1, 2, 3), any(3, 3, 2) })
    gradcheck(function(a, b) return a:mm(b) end, { any(2, 3), any(3, 4) })
    gradcheck(function(a, b) return a:bmm(b) end, { any(2, 2, 3), any(2, 3, 4) })
    gradcheck(function(a, b) return a:t():mm(b) end, { any(3, 2), any(3, 4) })
  end)

  it("of addmm (nn.Linear's product)", function()
    gradcheck(function(c, a, b) return torch.addmm(c, a, b) end, { any(4), any(2, 3), any(3, 4) })
    gradcheck(function(c, a, b) return torch.addmm(c, a, b) end, { any(2, 4), any(2, 3), any(3, 4) })
  end)

  it("through views", function()
    local x = any(2, 3, 4)
    gradcheck(function(t) return t:view(6, 4) end, { x })
    gradcheck(function(t) return t:reshape(4, -1) end, { x })
    gradcheck(function(t) return t:transpose(1, 3) * 2 end, { x })
    gradcheck(function(t) return t:permute(3, 1, 2) * 2 end, { x })
    gradcheck(function(t) return t:unsqueeze(2) end, { x })
    gradcheck(function(t) return t:unsqueeze(1):squeeze() end, { x })
    gradcheck(function(t) return t:flatten() end, { x })
    gradcheck(function(t) return t:select(2, 3) end, { x })
    gradcheck(function(t) return t:narrow(3, 2, 2) end, { x })
    gradcheck(function(t) return t[2] end, { x })
    gradcheck(function(t) return t[{ {}, { 1, 2 }, 3 }] end, { x })
    gradcheck(function(t) return t:t() end, { any(3, 2) })
    gradcheck(function(t) return t.T end, { any(3, 2) })
    gradcheck(function(t) return t:expand(3, 4) end, { any(1, 4) })
    gradcheck(function(t) return t:chunk(2, 2)[2] end, { any(2, 4) })
    gradcheck(function(t) return t:split(1, 1)[1] end, { any(2, 4) })
  end)

  it("through cat, stack, clone, contiguous and dtype moves", function()
    gradcheck(function(a, b) return torch.cat({ a, b }, 2) end, { any(2, 3), any(2, 1) })
    gradcheck(function(a, b) return torch.stack({ a, b }, 1) end, { any(2, 3), any(2, 3) })
    gradcheck(function(a) return a:clone() end, { any(3) })
    gradcheck(function(a) return a:t():contiguous() end, { any(2, 3) })
  end)

  it("of std and var, whole and per dim, with either correction", function()
    local x = any(3, 4)
    gradcheck(function(t) return t:std() end, { x })
    gradcheck(function(t) return t:var(2) end, { x })
    gradcheck(function(t) return t:std(1, true) end, { x })
    gradcheck(function(t) return t:var({ dim = 2, correction = 0 }) end, { x })
  end)

  it("of norm for p = 1, 2, 3 and inf", function()
    local x = away(3, 4)
    gradcheck(function(t) return t:norm() end, { x })
    gradcheck(function(t) return t:norm(1) end, { x })
    gradcheck(function(t) return t:norm(3) end, { x })
    gradcheck(function(t) return t:norm("inf") end, { x })
  end)

  it("of max and min, whole and per dim (distinct values)", function()
    local x = leaf(torch.randperm(12):double():view(3, 4) / 12) -- no ties: differentiable
    gradcheck(function(t) return t:max() end, { x })
    gradcheck(function(t) return t:min() end, { x })
    gradcheck(function(t) return (t:max(2)) end, { x })
    gradcheck(function(t) return (t:min(1, true)) end, { x })
  end)

  it("of a whole-tensor max splits the gradient between ties, as PyTorch does", function()
    local y = torch.tensor({ 3.0, 3.0, 1.0 }, { requires_grad = true })
    y:max():backward()
    assert.are.same({ 0.5, 0.5, 0.0 }, y.grad:tolist())
    local x = torch.tensor({ { 1.0, 5.0, 5.0 }, { 7.0, 2.0, 3.0 } }, { requires_grad = true })
    local v = x:max(2)
    v:sum():backward() -- the reported (first) index gets it
    assert.are.same({ { 0.0, 1.0, 0.0 }, { 1.0, 0.0, 0.0 } }, x.grad:tolist())
  end)

  it("of nll_loss over log_softmax (cross entropy) with 1-based targets", function()
    local target = torch.tensor({ 2, 1, 3 })
    gradcheck(function(x) return torch.nll_loss(x:log_softmax(2), target) end, { any(3, 3) })
  end)

  it("through a two-layer network", function()
    local x = any(4, 3)
    gradcheck(function(w1, b1, w2)
      return torch.addmm(b1, x, w1:t()):relu():matmul(w2:t()):tanh()
    end, { any(5, 3), any(5), any(2, 5) })
  end)
end)

describe("autograd semantics", function()
  it("names grad_fn nodes as PyTorch does", function()
    local x = torch.ones(2, 2, { requires_grad = true })
    assert.are.equal("tensor(8., grad_fn=<SumBackward0>)", tostring((x * 2):sum()))
    assert.are.equal("<AddBackward0>", (x + 1).grad_fn)
    assert.are.equal("<MulBackward0>", (x * x).grad_fn)
    assert.are.equal("<MmBackward0>", x:mm(x).grad_fn)
    assert.are.equal("<AddmmBackward0>", torch.addmm(torch.ones(2), x, x).grad_fn)
    assert.are.equal("<ViewBackward0>", x:view(4).grad_fn)
    assert.are.equal("<StdBackward0>", x:std().grad_fn)
    assert.are.equal("<VarBackward0>", x:var(1).grad_fn)
    assert.are.equal("<NormBackward1>", x:norm().grad_fn)
    assert.are.equal("<MaxBackward1>", x:max().grad_fn)
    assert.are.equal("<MaxBackward0>", x:max(1).grad_fn)
    assert.are.equal("<MinBackward0>", x:min(2).grad_fn)
    assert.is_nil(x.grad_fn)
    assert.is_true(x.is_leaf)
    assert.is_false((x + 1).is_leaf)
  end)

  it("prints requires_grad=True on leaves", function()
    assert.are.equal("tensor([1., 1.], requires_grad=True)", tostring(torch.ones(2, { requires_grad = true })))
  end)

  it("accumulates gradients across backward calls until reset", function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local g = nil
    for _ = 1, 3 do
      (x * x):sum():backward()
      g = g or x.grad
    end
    assert.are.same({ 6.0, 12.0 }, x.grad:tolist())
    assert.is_true(rawequal(g, x.grad)) -- accumulated in place, same object
    x.grad = nil
    x:sum():backward()
    assert.are.same({ 1.0, 1.0 }, x.grad:tolist())
  end)

  it("sums gradients of a tensor used twice", function()
    local x = torch.tensor({ 3.0 }, { requires_grad = true })
    local y = x * x + x * 4
    y:sum():backward()
    assert.are.same({ 10.0 }, x.grad:tolist())
  end)

  it("backward with an explicit gradient for non-scalars, and errors without one", function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local y = x * 3
    assert.has_error(function() y:backward() end, "grad can be implicitly created only for scalar outputs")
    y:backward(torch.tensor({ 1.0, 0.5 }))
    assert.are.same({ 3.0, 1.5 }, x.grad:tolist())
  end)

  it("refuses backward of a tensor that needs no grad", function()
    assert.has_error(function() torch.ones(2):sum():backward() end,
      "element 0 of tensors does not require grad and does not have a grad_fn")
  end)

  it("refuses a second backward through freed saved values", function()
    local x = torch.tensor({ 1.0 }, { requires_grad = true })
    local y = (x:exp()):sum()
    y:backward()
    assert.has_error(function() y:backward() end)
  end)

  it("does not record under no_grad, in both forms, and restores the mode after errors", function()
    local x = torch.ones(2, { requires_grad = true })
    local y = torch.no_grad(function() return x * 2 end)
    assert.is_false(y.requires_grad)
    do
      local g <close> = torch.no_grad()
      assert.is_false((x * 2).requires_grad)
      assert.is_false(torch.is_grad_enabled())
    end
    assert.is_true(torch.is_grad_enabled())
    assert.has_error(function() torch.no_grad(function() error("boom") end) end)
    assert.is_true(torch.is_grad_enabled())
    assert.is_true((x * 2).requires_grad)
  end)

  it("detach shares storage and leaves the graph", function()
    local x = torch.ones(3, { requires_grad = true })
    local d = (x * 2):detach()
    assert.is_false(d.requires_grad)
    assert.is_nil(d.grad_fn)
    local v = x:detach()
    torch.no_grad(function() x[1] = 5 end)
    assert.are.equal(5.0, v[1]:item())
  end)

  it("refuses in-place ops on leaves that require grad, but allows them under no_grad", function()
    local x = torch.ones(2, { requires_grad = true })
    assert.has_error(function() x:add_(1) end, "a leaf Variable that requires grad is being used in an in-place operation.")
    assert.has_error(function() x:zero_() end)
    assert.has_error(function() x[1] = 3 end)
    torch.no_grad(function() x:mul_(3) end)
    assert.are.same({ 3.0, 3.0 }, x:tolist())
  end)

  it("detects saved values modified in place before backward", function()
    local x = torch.ones(2, { requires_grad = true })
    local y = x:exp()
    local z = y:sum()
    torch.no_grad(function() y:mul_(2) end) -- y is an output; exp saved it
    assert.has_error(function() z:backward() end)
  end)

  it("only floating point tensors can require grad", function()
    assert.has_error(function() torch.ones(2, { dtype = torch.int64, requires_grad = true }) end)
    assert.has_error(function() torch.tensor({ 1, 2 }):requires_grad_() end)
  end)

  it("integer and comparison results do not require grad", function()
    local x = torch.ones(2, { requires_grad = true })
    assert.is_false(x:gt(0).requires_grad)
    assert.is_false(x:argmax().requires_grad)
  end)

  it("gradients land on the tensor's device and dtype", function()
    local x = torch.ones(2, { dtype = torch.float64, requires_grad = true });
    (x:float() * 2):sum():backward()
    assert.are.equal(torch.float64, x.grad.dtype)
    assert.are.same({ 2.0, 2.0 }, x.grad:tolist())
  end)

  it("nll_loss checks its targets", function()
    local lp = torch.zeros(2, 3)
    assert.has_error(function() torch.nll_loss(lp, torch.tensor({ 1, 4 })) end)
    assert.has_error(function() torch.nll_loss(lp, torch.tensor({ 0, 1 })) end)
    assert.has_error(function() torch.nll_loss(lp, torch.tensor({ 1.0, 2.0 })) end)
    assert.are.equal(0.0, torch.nll_loss(lp, torch.tensor({ 1, 3 })):item())
  end)
end)

describe("gradients of products with transposed operands", function()
  before_each(function() torch.manual_seed(3) end)

  -- mm's backward computes a transposed operand's gradient transposed
  -- ((g^T @ a)^T), as PyTorch does: same values, laid out like the operand
  it("match finite differences for each operand transposed, in mm, matmul and addmm", function()
    local a, b = any(5, 3), any(3, 4)
    local at, bt = any(3, 5), any(4, 3)  -- used as at:t(), bt:t()
    local bias = any(4)
    gradcheck(function(x, y) return x:t():mm(y) end, { at, b })
    gradcheck(function(x, y) return x:mm(y:t()) end, { a, bt })
    gradcheck(function(x, y) return x:t():mm(y:t()) end, { at, bt })
    gradcheck(function(x, y) return x:t():matmul(y:t()) end, { at, bt })
    gradcheck(function(c, x, y) return torch.addmm(c, x:t(), y:t()) end, { bias, at, bt })
    gradcheck(function(c, x, y) return torch.addmm(c, x, y:t()) end, { bias, a, bt })
  end)

  it("a leaf's .grad never is a slice of a larger gradient (cat's backward hands out slices)", function()
    local a = torch.randn(3, 4, { requires_grad = true })
    local b = torch.randn(5, 4, { requires_grad = true })
    torch.cat({ a, b }):mul(torch.arange(32):view(8, 4)):sum():backward()
    assert.are.same({ 0, 0 }, { a.grad:storage_offset(), b.grad:storage_offset() })
    assert.are.same(torch.arange(12, 32):view(5, 4):tolist(), b.grad:tolist())
  end)

  it("Linear's weight gradient becomes .grad as computed, with no copy queued after the products", function()
    local saved_n, saved_cap = torch._sim_configure(1)
    finally(function() collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)
    local l = torch.nn.Linear(64, 32):to("cuda:0")
    local x = torch.randn(16, 64, { device = "cuda:0" })
    torch.cuda.synchronize()
    local p = torch.profiler.profile(function() l(x):sum():backward() end)
    local wbytes = 64 * 32 * 4
    for _, e in ipairs(p.events) do
      assert.is_false(e.name:find("copy", 1, true) ~= nil and e.bytes >= wbytes,
        ("a %s of %d bytes (the weight's gradient copied)"):format(e.name, e.bytes))
    end
    assert.is_true(l.weight.grad:is_contiguous())
    -- d(sum(x @ W^T + b))/dW = ones^T @ x: every row is x's column sums
    local want = x:cpu():double():sum(1):expand(32, 64)
    assert.is_true(l.weight.grad:cpu():double():allclose(want, 1e-4, 1e-4))
  end)
end)

-- A tensor whose shape changed after it was used (x.data = ...) sends a
-- gradient of its new shape back into nodes that recorded the old one:
-- an error, as PyTorch's "returned an invalid gradient", never a read of
-- dims the gradient does not have (API fuzzer seed 99991 case 339: UBSan
-- overflow in the sum; plain builds gave a.grad of shape [1]).
describe("a gradient that no longer fits its input's shape", function()
  it("is an error naming the node, the index and both shapes; no .grad is written", function()
    local a = torch.randn(1, 1, 4, { requires_grad = true })
    local y = a * torch.randn(4)
    y.data = torch.ones(4)
    H.errors(function() y:sum():backward() end,
      { "Function MulBackward0 returned an invalid gradient at index 0 - got [4] but expected shape compatible with [1, 1, 4]" })
    assert.is_nil(a.grad)
  end)

  it("still sums broadcast gradients that fit", function()
    local a = torch.randn(1, 1, 4, { requires_grad = true })
    local b = torch.randn(3, 1, 4)
    local y = a * b
    y.data = torch.ones(3, 1, 4) -- same shape: nothing to refuse
    y:sum():backward()
    assert.are.same({ 1, 1, 4 }, a.grad:size())
    assert.is_true(a.grad:allclose(b:sum(1, true)))
  end)
end)
