-- autograd_coverage_spec.lua: no op silently drops a gradient (issue 14).
-- Every Tensor method and arithmetic metamethod is listed below in exactly
-- one class, and the spec fails for a method that is in none, so a new op
-- cannot be added without saying what autograd does with it:
--   GRAD     records a backward, checked against finite differences in float64
--   LOWP     a move to a lower-precision float: records a backward (sum's
--            gradient is exact)
--   NONFLOAT the result is not floating point (comparisons, indices,
--            integer casts): it can carry no gradient
--   REFUSE   called on a tensor that requires grad, raises a clear error
--   INPLACE  in-place: refused on a leaf that requires grad; on a result,
--            or with an operand that requires grad, recorded (checked
--            against finite differences)
--   FRESH    makes a new tensor from nothing but x's dtype and device
--            (new_zeros, ...): a leaf that does not require grad, as in PyTorch
--   META     returns no tensor of values computed from x (sizes, flags,
--            conversions to Lua, autograd controls)
local torch = require("torch")
local H = require("helpers")

local gradcheck = H.gradcheck
local function leaf(t) return t:double():requires_grad_() end
local function pos(...) return leaf(torch.rand(...) + 0.5) end
local function any(...) return leaf(torch.randn(...)) end
-- away from integers and from zero, so piecewise functions are smooth at the sample
local function off(...) return leaf(torch.rand(...) * 3 + 0.25) end

local GRAD = {
  abs = function() gradcheck(function(x) return x:abs() end, { off(3) }) end,
  add = function() gradcheck(function(a, b) return a:add(b) end, { any(3), any(3) }) end,
  bmm = function() gradcheck(function(a, b) return a:bmm(b) end, { any(2, 2, 3), any(2, 3, 2) }) end,
  ceil = function() gradcheck(function(x) return x:ceil() end, { off(3) }) end,
  chunk = function() gradcheck(function(x) return x:chunk(2)[2] end, { any(4) }) end,
  clamp = function() gradcheck(function(x) return x:clamp(0.5, 2) end, { off(4) }) end,
  clip = function() gradcheck(function(x) return x:clip(0.5, 2) end, { off(4) }) end,
  clone = function() gradcheck(function(x) return x:clone() end, { any(3) }) end,
  contiguous = function() gradcheck(function(x) return x:t():contiguous() end, { any(2, 3) }) end,
  cos = function() gradcheck(function(x) return x:cos() end, { any(3) }) end,
  div = function() gradcheck(function(a, b) return a:div(b) end, { any(3), pos(3) }) end,
  divide = function() gradcheck(function(a, b) return a:divide(b) end, { any(3), pos(3) }) end,
  double = function() gradcheck(function(x) return x:double() end, { any(3) }) end,
  exp = function() gradcheck(function(x) return x:exp() end, { any(3) }) end,
  expand = function() gradcheck(function(x) return x:expand(2, 3) end, { any(1, 3) }) end,
  expand_as = function() gradcheck(function(x) return x:expand_as(torch.zeros(2, 3)) end, { any(1, 3) }) end,
  expm1 = function() gradcheck(function(x) return x:expm1() end, { any(3) }) end,
  erf = function() gradcheck(function(x) return x:erf() end, { any(3) }) end,
  flatten = function() gradcheck(function(x) return x:flatten() end, { any(2, 3) }) end,
  floor = function() gradcheck(function(x) return x:floor() end, { off(3) }) end,
  floor_divide = function()
    gradcheck(function(a, b) return a:floor_divide(b) end, { off(4), off(4) })
    gradcheck(function(a) return a:floor_divide(0.75) end, { off(4) })
  end,
  index_select = function()
    gradcheck(function(x) return x:index_select(2, torch.tensor({ 3, 1, 3 })) end, { any(2, 3) })
  end,
  masked_fill = function()
    gradcheck(function(x) return x:masked_fill(torch.tensor({ true, false, true }), 0.5) end, { any(2, 3) })
  end,
  ["repeat"] = function() gradcheck(function(x) return x["repeat"](x, 2, 1, 2) end, { any(2, 3) }) end,
  repeat_interleave = function()
    gradcheck(function(x) return x:repeat_interleave(2, 1) end, { any(2, 3) })
    gradcheck(function(x) return x:repeat_interleave(torch.tensor({ 2, 0, 1 }), 2) end, { any(2, 3) })
  end,
  tile = function() gradcheck(function(x) return x:tile(2) end, { any(2, 3) }) end,
  where = function()
    gradcheck(function(a, b) return a:where(torch.tensor({ true, false, true }), b) end, { any(2, 3), any(3) })
  end,
  triu = function() gradcheck(function(x) return x:triu(1) end, { any(2, 3, 4) }) end,
  tril = function() gradcheck(function(x) return x:tril(-1) end, { any(4, 3) }) end,
  log = function() gradcheck(function(x) return x:log() end, { pos(3) }) end,
  log1p = function() gradcheck(function(x) return x:log1p() end, { pos(3) }) end,
  log_softmax = function() gradcheck(function(x) return x:log_softmax(2) end, { any(2, 3) }) end,
  matmul = function() gradcheck(function(a, b) return a:matmul(b) end, { any(2, 3), any(3, 2) }) end,
  max = function()
    gradcheck(function(x) return x:max() end, { leaf(torch.tensor({ 0.5, 2.0, 1.0 })) })
    gradcheck(function(a, b) return a:max(b) end, { any(4), any(4) })
  end,
  maximum = function() gradcheck(function(a, b) return a:maximum(b) end, { any(5), any(5) }) end,
  mean = function() gradcheck(function(x) return x:mean(1) end, { any(2, 3) }) end,
  min = function()
    gradcheck(function(x) return x:min() end, { leaf(torch.tensor({ 0.5, 2.0, 1.0 })) })
    gradcheck(function(a, b) return a:min(b) end, { any(4), any(4) })
  end,
  minimum = function() gradcheck(function(a, b) return a:minimum(b) end, { any(5), any(5) }) end,
  mm = function() gradcheck(function(a, b) return a:mm(b) end, { any(2, 3), any(3, 2) }) end,
  mul = function() gradcheck(function(a, b) return a:mul(b) end, { any(3), any(3) }) end,
  multiply = function() gradcheck(function(a, b) return a:multiply(b) end, { any(3), any(3) }) end,
  narrow = function() gradcheck(function(x) return x:narrow(1, 2, 2) end, { any(4) }) end,
  neg = function() gradcheck(function(x) return x:neg() end, { any(3) }) end,
  negative = function() gradcheck(function(x) return x:negative() end, { any(3) }) end,
  norm = function() gradcheck(function(x) return x:norm() end, { any(3) }) end,
  permute = function() gradcheck(function(x) return x:permute(2, 1) end, { any(2, 3) }) end,
  pow = function()
    gradcheck(function(a, b) return a:pow(b) end, { pos(3), any(3) })
    gradcheck(function(a) return a:pow(3) end, { any(3) })
  end,
  prod = function()
    gradcheck(function(x) return x:prod() end, { any(4) })
    gradcheck(function(x) return x:prod(2) end, { any(2, 3) })
    gradcheck(function(x) return x:prod(1, true) end, { any(3, 2) })
  end,
  reciprocal = function() gradcheck(function(x) return x:reciprocal() end, { pos(3) }) end,
  relu = function() gradcheck(function(x) return x:relu() end, { leaf(torch.tensor({ -1.2, 0.7, 1.9 })) }) end,
  remainder = function()
    gradcheck(function(a, b) return a:remainder(b) end, { off(4), off(4) })
    gradcheck(function(a) return a:remainder(0.7) end, { off(4) })
  end,
  pin_memory = function() gradcheck(function(x) return x:pin_memory() end, { any(3) }) end,
  reshape = function() gradcheck(function(x) return x:reshape(3, 2) end, { any(2, 3) }) end,
  round = function() gradcheck(function(x) return x:round() end, { off(3) }) end,
  rsqrt = function() gradcheck(function(x) return x:rsqrt() end, { pos(3) }) end,
  select = function() gradcheck(function(x) return x:select(1, 2) end, { any(3, 2) }) end,
  sigmoid = function() gradcheck(function(x) return x:sigmoid() end, { any(3) }) end,
  sign = function() gradcheck(function(x) return x:sign() end, { off(3) }) end,
  sin = function() gradcheck(function(x) return x:sin() end, { any(3) }) end,
  softmax = function() gradcheck(function(x) return x:softmax(1) end, { any(3, 2) }) end,
  split = function() gradcheck(function(x) return x:split(2)[2] end, { any(4) }) end,
  sqrt = function() gradcheck(function(x) return x:sqrt() end, { pos(3) }) end,
  square = function() gradcheck(function(x) return x:square() end, { any(3) }) end,
  squeeze = function() gradcheck(function(x) return x:squeeze() end, { any(1, 3) }) end,
  std = function() gradcheck(function(x) return x:std() end, { any(4) }) end,
  sub = function() gradcheck(function(a, b) return a:sub(b) end, { any(3), any(3) }) end,
  subtract = function() gradcheck(function(a, b) return a:subtract(b) end, { any(3), any(3) }) end,
  sum = function() gradcheck(function(x) return x:sum(2) end, { any(2, 3) }) end,
  t = function() gradcheck(function(x) return x:t() end, { any(2, 3) }) end,
  tanh = function() gradcheck(function(x) return x:tanh() end, { any(3) }) end,
  to = function() gradcheck(function(x) return x:to(torch.float64) end, { any(3) }) end,
  transpose = function() gradcheck(function(x) return x:transpose(1, 2) end, { any(2, 3) }) end,
  true_divide = function() gradcheck(function(a, b) return a:true_divide(b) end, { any(3), pos(3) }) end,
  trunc = function() gradcheck(function(x) return x:trunc() end, { off(3) }) end,
  type = function() gradcheck(function(x) return x:type(torch.float64) end, { any(3) }) end,
  unsqueeze = function() gradcheck(function(x) return x:unsqueeze(1) end, { any(3) }) end,
  var = function() gradcheck(function(x) return x:var(1) end, { any(3, 2) }) end,
  view = function() gradcheck(function(x) return x:view(3, 2) end, { any(2, 3) }) end,
  view_as = function() gradcheck(function(x) return x:view_as(torch.zeros(3, 2)) end, { any(2, 3) }) end,
  -- metamethods
  __add = function() gradcheck(function(a, b) return a + b end, { any(3), any(3) }) end,
  __sub = function() gradcheck(function(a, b) return a - b end, { any(3), any(3) }) end,
  __mul = function() gradcheck(function(a, b) return a * b end, { any(3), any(3) }) end,
  __div = function() gradcheck(function(a, b) return a / b end, { any(3), pos(3) }) end,
  __idiv = function() gradcheck(function(a, b) return a // b end, { off(3), off(3) }) end,
  __mod = function()
    gradcheck(function(a, b) return a % b end, { off(4), off(4) })
    gradcheck(function(b) return 2.6 % b end, { off(4) })
  end,
  __pow = function() gradcheck(function(a, b) return a ^ b end, { pos(3), any(3) }) end,
  __unm = function() gradcheck(function(a) return -a end, { any(3) }) end,
  __index = function() gradcheck(function(x) return x[2] end, { any(3, 2) }) end,
}

local LOWP = { float = true, half = true, bfloat16 = true }

local NONFLOAT = {
  argmax = function(x) return x:argmax() end, argmin = function(x) return x:argmin() end,
  eq = function(x) return x:eq(x) end, ne = function(x) return x:ne(x) end, lt = function(x) return x:lt(x) end,
  le = function(x) return x:le(x) end, gt = function(x) return x:gt(x) end, ge = function(x) return x:ge(x) end,
  greater = function(x) return x:greater(x) end, less = function(x) return x:less(x) end,
  logical_and = function(x) return x:logical_and(x) end, logical_or = function(x) return x:logical_or(x) end,
  logical_not = function(x) return x:logical_not() end, all = function(x) return x:all() end,
  any = function(x) return x:any() end, bool = function(x) return x:bool() end, byte = function(x) return x:byte() end,
  char = function(x) return x:char() end, int = function(x) return x:int() end, long = function(x) return x:long() end,
  short = function(x) return x:short() end,
}

local REFUSE = {
}

local FRESH = {
  new_zeros = function(x) return x:new_zeros(2) end, new_ones = function(x) return x:new_ones(2) end,
  new_empty = function(x) return x:new_empty(2) end, new_full = function(x) return x:new_full({ 2 }, 1.5) end,
  new_tensor = function(x) return x:new_tensor({ 1.0, 2.0 }) end,
}

local META = {
  allclose = true, equal = true, item = true, tolist = true, size = true, stride = true, dim = true, numel = true,
  nelement = true, element_size = true, is_contiguous = true, is_pinned = true, is_floating_point = true, storage_offset = true,
  data_ptr = true, get_device = true, backward = true, register_post_accumulate_grad_hook = true, detach = true, detach_ = true, requires_grad_ = true, cpu = true, cuda = true,
  -- metamethods that compute nothing differentiable
  __gc = true, __close = true, __tostring = true, __len = true, __newindex = true, __eq = true, __lt = true,
  __le = true, __name = true, __concat = true, __call = true,
}

-- In-place methods and a call of each with an operand (or none).
local INPLACE = {
  add_ = "t", sub_ = "t", mul_ = "t", div_ = "t", floor_divide_ = "t", remainder_ = "t", pow_ = "t", copy_ = "t",
  fill_ = "s", zero_ = "", clamp_ = "c", uniform_ = "", normal_ = "",
}

local function methods()
  local mt = getmetatable(torch.zeros(1))
  local _, tbl = debug.getupvalue(mt.__index, 1)
  local names = {}
  for k in pairs(tbl) do names[#names + 1] = k end
  for k, v in pairs(mt) do
    if type(k) == "string" and k:sub(1, 2) == "__" and type(v) == "function" then names[#names + 1] = k end
  end
  table.sort(names)
  return names
end

describe("every op records a gradient or says it cannot", function()
  before_each(function() torch.manual_seed(11) end)

  it("lists every Tensor method and metamethod in exactly one class", function()
    local missing = {}
    for _, name in ipairs(methods()) do
      local n = (GRAD[name] and 1 or 0) + (LOWP[name] and 1 or 0) + (NONFLOAT[name] and 1 or 0) +
                (REFUSE[name] and 1 or 0) + (META[name] and 1 or 0) + (FRESH[name] and 1 or 0)
      local base = name:match("^(.-)_$")
      if name ~= "requires_grad_" and name ~= "detach_" and base then
        n = n + ((INPLACE[name] or GRAD[base] or NONFLOAT[base]) and 1 or 0)
      end
      if n ~= 1 then missing[#missing + 1] = name .. " (" .. n .. " classes)" end
    end
    assert.are.same({}, missing)
  end)

  for _, name in ipairs(methods()) do
    if GRAD[name] then
      it("gradient of " .. name .. " matches finite differences", GRAD[name])
    elseif LOWP[name] then
      it(name .. " records its backward", function()
        local x = any(3)
        local y = x[name](x)
        assert.is_not_nil(y.grad_fn)
        y:sum():backward()
        assert.are.same({ 1.0, 1.0, 1.0 }, x.grad:tolist())
      end)
    elseif NONFLOAT[name] then
      it(name .. " has a result that cannot carry a gradient", function()
        local r = NONFLOAT[name](any(3))
        assert.is_false(r:is_floating_point())
        assert.is_nil(r.grad_fn)
      end)
    elseif FRESH[name] then
      it(name .. " makes a leaf that does not require grad", function()
        local r = FRESH[name](any(3))
        assert.is_nil(r.grad_fn)
        assert.is_false(r.requires_grad)
        assert.are.equal("float64", r.dtype.name)
      end)
    elseif REFUSE[name] then
      it(name .. " refuses a tensor that requires grad", function()
        H.errors(function() REFUSE[name](any(3)) end, { name, "autograd" })
        assert.is_true(torch.no_grad(function() return REFUSE[name](any(3)) end):is_floating_point())
      end)
    end
  end

  for name, how in pairs(INPLACE) do
    it(name .. " is refused on a leaf that requires grad, and recorded on a result or with an operand that requires grad", function()
      local args = how == "t" and { any(3) } or how == "s" and { 1.5 } or how == "c" and { 0.5, 2 } or {}
      local x = any(3)
      H.errors(function() x[name](x, table.unpack(args)) end, "in-place")
      if name == "uniform_" or name == "normal_" then return end -- random: no finite differences
      -- the in-place op on a result: gradients as the out-of-place graph's,
      -- for x's old values and for the operand
      local function inplace(a, b)
        local y = a * 1
        if how == "t" then y[name](y, b) else y[name](y, table.unpack(args)) end
        return y * a
      end
      gradcheck(inplace, how == "t" and { off(3), off(3) } or { off(3) })
      if how == "t" then
        local plain = torch.ones(3, { dtype = torch.float64 })
        local w = off(3)
        plain[name](plain, w) -- a tensor outside the graph joins it
        assert.is_not_nil(plain.grad_fn)
        torch.no_grad(function() plain[name](plain, any(3)) end) -- not recorded where grad is off
      end
    end)
  end

  it("index assignment of a tensor that requires grad is recorded (CopySlices)", function()
    local plain = torch.zeros(3, { dtype = torch.float64 })
    local w = any(1)
    plain[2] = w[1]
    assert.are.equal("<CopySlices>", tostring(plain.grad_fn))
    plain:sum():backward()
    assert.are.same({ 1.0 }, w.grad:tolist())
  end)
end)

describe("hand-worked gradients (PyTorch's values)", function()
  it("maximum and minimum give the winner the gradient and split ties", function()
    local x = torch.tensor({ 1.0, 2.0, 3.0 }, { requires_grad = true })
    local l = (x:maximum(torch.full({ 3 }, 2.0)) + x):sum()
    l:backward()
    assert.are.same({ 1.0, 1.5, 2.0 }, x.grad:tolist())
    x.grad = nil
    l = x:minimum(torch.full({ 3 }, 2.0)):sum()
    l:backward()
    assert.are.same({ 1.0, 0.5, 0.0 }, x.grad:tolist())
  end)

  it("prod with no zero, one zero and two zeros", function()
    local x = torch.tensor({ 2.0, 4.0, 3.0 }, { requires_grad = true })
    x:prod():backward()
    assert.are.same({ 12.0, 6.0, 8.0 }, x.grad:tolist())
    local y = torch.tensor({ 2.0, 0.0, 3.0 }, { requires_grad = true })
    y:prod():backward()
    assert.are.same({ 0.0, 6.0, 0.0 }, y.grad:tolist())
    local z = torch.tensor({ { 0.0, 5.0, 0.0 }, { 1.0, 0.0, 7.0 } }, { requires_grad = true })
    z:prod(2):sum():backward()
    assert.are.same({ { 0.0, 0.0, 0.0 }, { 0.0, 7.0, 0.0 } }, z.grad:tolist())
    assert.are.equal("<ProdBackward0>", x:prod().grad_fn)
    assert.are.equal("<ProdBackward1>", z:prod(1).grad_fn)
  end)

  it("remainder: 1 for the dividend, -floor(a/b) for the divisor", function()
    local a = torch.tensor({ 7.0, -7.0 }, { requires_grad = true })
    local b = torch.tensor({ 2.0, 2.0 }, { requires_grad = true })
    a:remainder(b):sum():backward()
    assert.are.same({ 1.0, 1.0 }, a.grad:tolist())
    assert.are.same({ -3.0, 4.0 }, b.grad:tolist())
  end)
end)

describe(".grad assignment is validated as PyTorch does", function()
  it("refuses the tensor itself", function()
    local x = torch.zeros(3, { requires_grad = true })
    H.errors(function() x.grad = x end, "can't assign Variable as its own grad")
    assert.is_nil(x.grad)
  end)

  it("refuses another shape, dtype or device", function()
    local x = torch.zeros(3, { requires_grad = true })
    H.errors(function() x.grad = torch.zeros(1) end, { "different size", "[3]", "[1]" })
    H.errors(function() x.grad = torch.zeros(3, 1) end, "different size")
    H.errors(function() x.grad = torch.zeros(3, { dtype = torch.float64 }) end, { "different type", "float32", "float64" })
    if H.gpus(1) then
      H.errors(function() x.grad = torch.zeros(3, { device = "cuda:0" }) end, { "different device", "cpu", "cuda:0" })
    end
    H.release_gpus()
    assert.is_nil(x.grad)
    local g = torch.ones(3)
    x.grad = g
    assert.is_true(rawequal(x.grad, g) or x.grad:equal(g))
    x.grad = nil
    assert.is_nil(x.grad)
  end)

  it("refuses a grad that is part of a graph, and grad chains that would loop", function()
    local x = torch.zeros(3, { requires_grad = true })
    H.errors(function() x.grad = x * 2 end, { "grad_fn", "detach" })
    x.grad = (x * 2):detach()
    local a, b = torch.zeros(2), torch.zeros(2)
    a.grad = b
    H.errors(function() b.grad = a end, "cycle")
    local c = torch.zeros(2)
    b.grad = c
    H.errors(function() c.grad = a end, "cycle")
  end)

  it("an optimizer never sees a wrong-shaped gradient", function()
    local w = torch.nn.Parameter(torch.ones(2, 2))
    H.errors(function() w.grad = torch.ones(2) end, "different size")
    local opt = torch.optim.Adam({ w }, { lr = 0.1 })
    w.grad = torch.ones(2, 2)
    opt:step()
    assert.are.same({ 2, 2 }, H.shape(w))
  end)
end)
