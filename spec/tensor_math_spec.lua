-- Elementwise math: unary ops, binary ops and operators with tensors and
-- Lua numbers on either side, broadcasting, comparisons, in-place ops,
-- fill_/zero_/copy_, clamp, pow, floor division and remainder. References
-- are computed in Lua doubles (rounded to float32 with H.f32 where the
-- result is float32) or are PyTorch's documented results.
local torch = require("torch")
local H = require("helpers")

local check, f32 = H.check, H.f32

-- Known bugs in files this suite may not fix (name -> what is wrong).
local KNOWN = {}
local it = H.it_unless(KNOWN, it, pending)

-- Lua references for the unary ops (double precision)
local function tanh(x)
  if x > 20 then return 1.0 elseif x < -20 then return -1.0 end
  local e = math.exp(2 * x)
  return (e - 1) / (e + 1)
end
local function round_even(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return f + 0.0
end
local function trunc(x) return (x >= 0 and math.floor(x) or math.ceil(x)) + 0.0 end
local function sign(x) return x > 0 and 1.0 or x < 0 and -1.0 or 0.0 end

-- name, reference, input domain ("any" or "pos"), float32 tolerance
-- (nil = exact: the op is correctly rounded in float32)
local UNARY = {
  {"neg", function(x) return -x end, "any"},
  {"abs", math.abs, "any"},
  {"exp", math.exp, "any", 3e-7},
  {"log", math.log, "pos", 3e-7},
  {"sqrt", math.sqrt, "pos"},
  {"rsqrt", function(x) return 1 / math.sqrt(x) end, "pos", 3e-7},
  {"sigmoid", function(x) return 1 / (1 + math.exp(-x)) end, "any", 3e-7},
  {"tanh", tanh, "any", 3e-7},
  {"relu", function(x) return x > 0 and x or 0.0 end, "any"},
  {"sin", math.sin, "any", 3e-7},
  {"cos", math.cos, "any", 3e-7},
  {"floor", function(x) return math.floor(x) + 0.0 end, "any"},
  {"ceil", function(x) return math.ceil(x) + 0.0 end, "any"},
  {"round", round_even, "any"},
  {"trunc", trunc, "any"},
  {"sign", sign, "any"},
  {"reciprocal", function(x) return 1 / x end, "pos"},
  {"log1p", function(x) return math.log(1 + x) end, "pos", 3e-7},
  {"expm1", function(x) return math.exp(x) - 1 end, "any", 1e-6},
  {"square", function(x) return x * x end, "any"},
}

-- inputs exact in float32: multiples of 1/8 in [-6, 6], plus halves for round
local ANY = {-6.0, -4.5, -2.5, -1.5, -1.0, -0.625, -0.5, -0.125, 0.0, 0.125, 0.5, 0.75, 1.0, 1.5, 2.5, 3.375, 5.0, 6.0}
local POS = {0.125, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.375, 10.0, 100.0, 1024.5}

describe("unary ops", function()
  for _, u in ipairs(UNARY) do
    local name, ref, domain, tol = u[1], u[2], u[3], u[4]
    local xs = domain == "pos" and POS or ANY
    it(name .. " on float64 matches the double reference", function()
      local x = torch.tensor(xs, {dtype = torch.float64})
      local want = H.map(xs, ref)
      local y = x[name](x)
      assert.are.equal("float64", H.dtype(y))
      if tol then H.assert_close(y:tolist(), want, 1e-14, 1e-15) else H.assert_list_equal(y:tolist(), want) end
      H.assert_list_equal(x:tolist(), xs) -- input untouched
    end)
    it(name .. " on float32 matches the double reference rounded to float32", function()
      local x = torch.tensor(xs)
      local want = H.map(xs, function(v) return f32(ref(v)) end)
      local y = torch[name](x) -- the torch.<op>(x) form
      assert.are.equal("float32", H.dtype(y))
      if tol then H.assert_close(y:tolist(), want, tol, 1e-30) else H.assert_list_equal(y:tolist(), want) end
    end)
    it(name .. "_ works in place and returns the tensor itself", function()
      local x = torch.tensor(xs, {dtype = torch.float64})
      local r = x[name .. "_"](x)
      assert.is_true(rawequal(r, x))
      local want = H.map(xs, ref)
      if tol then H.assert_close(x:tolist(), want, 1e-14, 1e-15) else H.assert_list_equal(x:tolist(), want) end
    end)
    it(name .. " on a non-contiguous view reads the right elements", function()
      local base = torch.tensor({xs, xs}, {dtype = torch.float64}):t() -- [n, 2]
      local y = base[name](base)
      local want = {}
      for i, v in ipairs(xs) do want[i] = {ref(v), ref(v)} end
      H.assert_close(y:tolist(), want, 1e-14, 1e-15)
    end)
  end

  it("exp, log, sqrt, sigmoid, tanh at special values (IEEE / PyTorch)", function()
    local inf, nan = math.huge, 0 / 0
    local x = torch.tensor({-inf, inf, 0.0, -0.0})
    H.assert_list_equal(x:exp():tolist(), {0.0, inf, 1.0, 1.0})
    H.assert_list_equal(x:sigmoid():tolist(), {0.0, 1.0, 0.5, 0.5})
    H.assert_list_equal(x:tanh():tolist(), {-1.0, 1.0, 0.0, -0.0})
    local l = torch.tensor({0.0, -1.0, inf}):log():tolist()
    assert.are.equal(-inf, l[1])
    assert.is_true(H.isnan(l[2]))
    assert.are.equal(inf, l[3])
    assert.is_true(H.isnan(torch.tensor({-1.0}):sqrt():item()))
    assert.are.equal(inf, torch.tensor({0.0}):reciprocal():item())
    assert.are.equal(-inf, torch.tensor({-0.0}):reciprocal():item())
    for _, op in ipairs({"exp", "log", "sqrt", "sigmoid", "tanh", "relu", "abs", "neg", "floor", "sin"}) do
      assert.is_true(H.isnan(torch.tensor({nan})[op](torch.tensor({nan})):item()), op .. "(nan)")
    end
  end)
  it("sign of NaN and of -0.0 is 0, as PyTorch", function()
    H.assert_list_equal(torch.tensor({0 / 0, -0.0, 0.0, -3.0, 7.5}):sign():tolist(), {0.0, 0.0, 0.0, -1.0, 1.0})
  end)
  it("round rounds halves to even", function()
    H.assert_list_equal(torch.tensor({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999}):round():tolist(),
                        {0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 2.0})
  end)
  it("float32 exp is accurate over its whole range (|rel err| < 3e-7)", function()
    local xs = {}
    for i = -870, 880 do xs[#xs + 1] = f32(i / 10 + 0.0137) end
    local got = torch.tensor(xs):exp():tolist()
    for i, v in ipairs(xs) do
      local want = math.exp(v)
      local rel = math.abs(got[i] - want) / want
      assert.is_true(rel < 3e-7, string.format("exp(%.9g): got %.9g want %.9g", v, got[i], want))
    end
  end)
  it("float32 exp overflows to inf and underflows to 0 like expf", function()
    local v = torch.tensor({88.8, 89.0, 1000.0, -104.0, -1000.0}):exp():tolist()
    H.assert_list_equal(v, {math.huge, math.huge, math.huge, 0.0, 0.0})
    -- a subnormal result: exp(-100) ~ 3.72e-44
    H.assert_close(torch.tensor({-100.0}):exp():tolist(), {f32(math.exp(-100))}, 0.05, 0)
  end)
  it("math on integer tensors gives float32", function()
    local x = torch.tensor({0, 1, 4})
    check(x:exp(), "float32", {3}, {1.0, f32(math.exp(1)), f32(math.exp(4))}, 3e-7, 0)
    check(x:sqrt(), "float32", {3}, {0.0, 1.0, 2.0})
    check(x:sigmoid(), "float32", {3}, {0.5, f32(1 / (1 + math.exp(-1))), f32(1 / (1 + math.exp(-4)))}, 3e-7, 0)
    check(torch.tensor({1}, {dtype = torch.uint8}):log(), "float32", {1}, {0.0})
  end)
  it("integer-preserving ops keep integer dtypes", function()
    local x = torch.tensor({-3, 0, 5}, {dtype = torch.int32})
    check(x:abs(), "int32", {3}, {3, 0, 5})
    check(-x, "int32", {3}, {3, 0, -5})
    check(x:neg(), "int32", {3}, {3, 0, -5})
    check(x:relu(), "int32", {3}, {0, 0, 5})
    check(x:sign(), "int32", {3}, {-1, 0, 1})
    check(x:square(), "int32", {3}, {9, 0, 25})
    check(x:floor(), "int32", {3}, {-3, 0, 5})
    check(x:round(), "int32", {3}, {-3, 0, 5})
  end)
  it("an integer tensor cannot take a float result in place", function()
    local x = torch.tensor({1, 4})
    H.errors(function() x:sqrt_() end, "can't be cast to the desired output type Long")
    H.assert_list_equal(x:tolist(), {1, 4})
  end)
  it("negation of a bool tensor is refused with PyTorch's message", function()
    H.errors(function() return -torch.tensor({true}) end, "logical_not")
  end)
  it("logical_not gives bool for any dtype", function()
    check(torch.tensor({0.0, 2.5, -1.0}):logical_not(), "bool", {3}, {true, false, false})
    check(torch.tensor({0, 3}):logical_not(), "bool", {2}, {true, false})
    check(torch.tensor({true, false}):logical_not(), "bool", {2}, {false, true})
  end)
  it("float16 and bfloat16 unary ops compute in float32 and round back", function()
    local x = torch.tensor({0.5, 1.0, 2.0}, {dtype = torch.float16})
    local y = x:exp()
    assert.are.equal("float16", H.dtype(y))
    -- e^0.5 = 1.6487 -> float16 1.6484375, e = 2.71828 -> 2.71875, e^2 = 7.389 -> 7.390625
    H.assert_list_equal(y:tolist(), {1.6484375, 2.71875, 7.390625})
    local b = torch.tensor({4.0}, {dtype = torch.bfloat16}):sqrt()
    check(b, "bfloat16", {1}, {2.0})
  end)
end)

describe("binary ops and operators", function()
  local A = {{1.5, -2.0, 3.25}, {0.5, 4.0, -6.5}}
  local B = {{2.0, 0.5, -1.25}, {-3.0, 8.0, 2.5}}
  local REF = {
    {"add", "+", function(a, b) return a + b end},
    {"sub", "-", function(a, b) return a - b end},
    {"mul", "*", function(a, b) return a * b end},
    {"div", "/", function(a, b) return a / b end},
  }
  local OPS = {
    ["+"] = function(a, b) return a + b end, ["-"] = function(a, b) return a - b end,
    ["*"] = function(a, b) return a * b end, ["/"] = function(a, b) return a / b end,
    ["//"] = function(a, b) return a // b end, ["%"] = function(a, b) return a % b end,
    ["^"] = function(a, b) return a ^ b end,
  }
  for _, r in ipairs(REF) do
    local name, sym, ref = r[1], r[2], r[3]
    for _, dtn in ipairs({"float32", "float64"}) do
      it(name .. " (" .. sym .. ") of two " .. dtn .. " tensors", function()
        local a, b = torch.tensor(A, {dtype = torch[dtn]}), torch.tensor(B, {dtype = torch[dtn]})
        local want = H.map2(A, B, function(x, y)
          local v = ref(x, y)
          return dtn == "float32" and f32(v) or v
        end)
        check(OPS[sym](a, b), dtn, {2, 3}, want)
        check(a[name](a, b), dtn, {2, 3}, want)
        check(torch[name](a, b), dtn, {2, 3}, want)
      end)
      it(name .. " (" .. sym .. ") of a " .. dtn .. " tensor and a Lua number, either side", function()
        local a = torch.tensor(A, {dtype = torch[dtn]})
        local rnd = dtn == "float32" and f32 or function(v) return v end
        check(OPS[sym](a, 3), dtn, {2, 3}, H.map(A, function(x) return rnd(ref(x, 3)) end))
        check(OPS[sym](a, 0.25), dtn, {2, 3}, H.map(A, function(x) return rnd(ref(x, 0.25)) end))
        check(OPS[sym](3, a), dtn, {2, 3}, H.map(A, function(x) return rnd(ref(3, x)) end))
        check(OPS[sym](0.25, a), dtn, {2, 3}, H.map(A, function(x) return rnd(ref(0.25, x)) end))
        check(a[name](a, 3), dtn, {2, 3}, H.map(A, function(x) return rnd(ref(x, 3)) end))
      end)
    end
  end
  it("int64 add, sub, mul with tensors and numbers on either side", function()
    local a, b = torch.tensor({{1, -2, 3}, {40, 5, -6}}), torch.tensor({{7, 8, -9}, {10, -11, 12}})
    check(a + b, "int64", {2, 3}, {{8, 6, -6}, {50, -6, 6}})
    check(a - b, "int64", {2, 3}, {{-6, -10, 12}, {30, 16, -18}})
    check(a * b, "int64", {2, 3}, {{7, -16, -27}, {400, -55, -72}})
    check(10 - a, "int64", {2, 3}, {{9, 12, 7}, {-30, 5, 16}})
    check(a * -2, "int64", {2, 3}, {{-2, 4, -6}, {-80, -10, 12}})
    check(a + 0.5, "float32", {2, 3}, {{1.5, -1.5, 3.5}, {40.5, 5.5, -5.5}})
  end)
  it("unary minus", function()
    check(-torch.tensor({1.5, -2.0}), "float32", {2}, {-1.5, 2.0})
    check(-torch.tensor({3, -4}), "int64", {2}, {-3, 4})
  end)
  it("add/sub take alpha: a + alpha * b", function()
    local a, b = torch.tensor({1.0, 2.0}), torch.tensor({10.0, 20.0})
    check(a:add(b, 2), "float32", {2}, {21.0, 42.0})
    check(a:add(b, {alpha = 0.5}), "float32", {2}, {6.0, 12.0})
    check(a:sub(b, 3), "float32", {2}, {-29.0, -58.0})
    check(torch.tensor({1, 2}):add(torch.tensor({3, 4}), 10), "int64", {2}, {31, 42})
    check(a:add(4, 2), "float32", {2}, {9.0, 10.0})
  end)
  it("aliases multiply, divide, subtract, true_divide, negative", function()
    local a, b = torch.tensor({6.0}), torch.tensor({4.0})
    assert.are.equal(24.0, a:multiply(b):item())
    assert.are.equal(1.5, a:divide(b):item())
    assert.are.equal(2.0, a:subtract(b):item())
    assert.are.equal(1.5, a:true_divide(b):item())
    assert.are.equal(-6.0, a:negative():item())
  end)
  it("division by zero in floats gives inf / nan; integer true division gives float", function()
    local v = (torch.tensor({1.0, -1.0, 0.0}) / 0):tolist()
    assert.are.equal(math.huge, v[1])
    assert.are.equal(-math.huge, v[2])
    assert.is_true(H.isnan(v[3]))
    local w = (torch.tensor({1, 0}) / 0):tolist()
    assert.are.equal(math.huge, w[1])
    assert.is_true(H.isnan(w[2]))
  end)
  it("bool tensors: + is or, * is and; - of two bools is refused", function()
    local a, b = torch.tensor({true, false, false}), torch.tensor({true, true, false})
    check(a + b, "bool", {3}, {true, true, false})
    check(a * b, "bool", {3}, {true, false, false})
    H.errors(function() return a - b end, "Subtraction")
  end)
  it("a subtraction with a bool operand on either side is refused, as in PyTorch", function()
    local msg = "Subtraction, the `-` operator, with a bool tensor is not supported"
    H.errors(function() return torch.tensor({1.0}) - torch.tensor({true}) end, msg)
    H.errors(function() return torch.tensor({true}) - torch.tensor({1}) end, msg)
    H.errors(function() return torch.tensor({true}) - 2 end, msg)
    H.errors(function() return 2 - torch.tensor({true}) end, msg)
    H.errors(function() return torch.tensor({1}):sub(torch.tensor({false})) end, msg)
    local x = torch.tensor({1.0})
    H.errors(function() x:sub_(torch.tensor({true})) end, msg)
    H.assert_list_equal(x:tolist(), {1.0})
  end)
  it("maximum and minimum, NaN propagates", function()
    local a, b = torch.tensor({1.0, 5.0, 0 / 0, 2.0}), torch.tensor({3.0, 2.0, 1.0, 0 / 0})
    local mx, mn = a:maximum(b):tolist(), a:minimum(b):tolist()
    assert.are.same({3.0, 5.0}, {mx[1], mx[2]})
    assert.are.same({1.0, 2.0}, {mn[1], mn[2]})
    assert.is_true(H.isnan(mx[3]) and H.isnan(mx[4]) and H.isnan(mn[3]) and H.isnan(mn[4]))
    check(torch.tensor({1, 9}):maximum(torch.tensor({5, 2})), "int64", {2}, {5, 9})
    check(torch.tensor({1, 9}):max(torch.tensor({5, 2})), "int64", {2}, {5, 9})
    check(torch.tensor({1, 9}):min(torch.tensor({5, 2})), "int64", {2}, {1, 2})
  end)
  it("a bad operand is an error", function()
    H.errors(function() return torch.ones(2) + "a" end, "expected a tensor or a number")
    H.errors(function() return {} * torch.ones(2) end, "expected a tensor or a number")
  end)
end)

describe("broadcasting", function()
  it("column + row gives the outer sum", function()
    local c = torch.tensor({{1.0}, {2.0}, {3.0}})
    local r = torch.tensor({10.0, 20.0, 30.0, 40.0})
    check(c + r, "float32", {3, 4}, {{11.0, 21.0, 31.0, 41.0}, {12.0, 22.0, 32.0, 42.0}, {13.0, 23.0, 33.0, 43.0}})
    check(r + c, "float32", {3, 4}, {{11.0, 21.0, 31.0, 41.0}, {12.0, 22.0, 32.0, 42.0}, {13.0, 23.0, 33.0, 43.0}})
  end)
  it("leading dims are added; size-1 dims stretch", function()
    local a = torch.arange(24):view(2, 3, 4)
    local b = torch.tensor({100, 200, 300, 400})
    local got = (a + b):tolist()
    for i = 1, 2 do for j = 1, 3 do for k = 1, 4 do
      assert.are.equal((i - 1) * 12 + (j - 1) * 4 + (k - 1) + k * 100, got[i][j][k])
    end end end
    local x = torch.ones(5, 1, 3)
    local y = torch.ones(4, 1)
    assert.are.same({5, 4, 3}, H.shape(x * y))
  end)
  it("a 0-d tensor and size-0 dims broadcast", function()
    check(torch.tensor({1.0, 2.0}) * torch.tensor(3.0), "float32", {2}, {3.0, 6.0})
    assert.are.same({0, 3}, H.shape(torch.ones(0, 1) + torch.ones(3)))
  end)
  it("broadcasting works with non-contiguous operands", function()
    local m = torch.arange(6):view(2, 3):t() -- [3, 2]: {{0,3},{1,4},{2,5}}
    check(m + torch.tensor({10, 20}), "int64", {3, 2}, {{10, 23}, {11, 24}, {12, 25}})
    check(m * m[{{}, {1, 1}}], "int64", {3, 2}, {{0, 0}, {1, 4}, {4, 10}})
  end)
  it("incompatible shapes are an error naming both sizes", function()
    H.errors(function() return torch.ones(2, 3) + torch.ones(4) end,
             {"size of tensor a (3) must match the size of tensor b (4)", "[2, 3]", "[4]"})
    H.errors(function() return torch.ones(2, 3):mul(torch.ones(3, 2)) end, "must match")
  end)
  it("large broadcast sums are correct (parallel path)", function()
    local n = 300
    local a = torch.arange(n, {dtype = torch.float64}):view(n, 1)
    local b = torch.arange(n, {dtype = torch.float64}):view(1, n) * 1000
    local s = (a + b):sum():item()
    -- sum over i, j of (i + 1000 j) = n * sum(i) + 1000 * n * sum(j)
    local si = n * (n - 1) / 2
    assert.are.equal(n * si + 1000 * n * si, s)
  end)
end)

describe("comparisons", function()
  local a = torch.tensor({1.0, 2.0, 3.0, 0 / 0})
  local b = torch.tensor({2.0, 2.0, 1.0, 0 / 0})
  it("eq ne lt le gt ge give bool tensors", function()
    check(a:eq(b), "bool", {4}, {false, true, false, false})
    check(a:ne(b), "bool", {4}, {true, false, true, true})
    check(a:lt(b), "bool", {4}, {true, false, false, false})
    check(a:le(b), "bool", {4}, {true, true, false, false})
    check(a:gt(b), "bool", {4}, {false, false, true, false})
    check(a:ge(b), "bool", {4}, {false, true, true, false})
    check(a:greater(b), "bool", {4}, {false, false, true, false})
    check(a:less(b), "bool", {4}, {true, false, false, false})
  end)
  it("compare with Lua numbers and broadcast", function()
    check(a:gt(1.5), "bool", {4}, {false, true, true, false})
    check(torch.tensor({1, 2, 3}):eq(2), "bool", {3}, {false, true, false})
    check(torch.tensor({{1}, {3}}):lt(torch.tensor({2, 4})), "bool", {2, 2}, {{true, true}, {false, true}})
    check(torch.eq(torch.tensor({5}), 5), "bool", {1}, {true})
  end)
  it("int64 comparisons are exact beyond 2^53", function()
    local big = torch.tensor({(1 << 53) + 1})
    check(big:eq(1 << 53), "bool", {1}, {false})
    check(big:gt(1 << 53), "bool", {1}, {true})
  end)
  it("logical_and / logical_or treat non-zero as true", function()
    check(torch.tensor({0.0, 1.0, 2.0, 0.0}):logical_and(torch.tensor({1, 1, 0, 0})), "bool", {4}, {false, true, false, false})
    check(torch.tensor({0.0, 1.0, 2.0, 0.0}):logical_or(torch.tensor({1, 1, 0, 0})), "bool", {4}, {true, true, true, false})
  end)
  it("Lua's == is true for the same object; on two tensors it is an error pointing to eq/equal", function()
    local x = torch.ones(2)
    assert.is_true(x == x)
    -- (issue 22 item 5: a silent false would be a wrong answer; spec/tensor_fields_spec.lua)
    local ok, err = pcall(function() return x == torch.ones(2) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("x:eq(y)", 1, true), err)
  end)
end)

describe("floor division and remainder", function()
  it("integer // and % follow Python's sign rules", function()
    local a = torch.tensor({-7, 7, -7, 7, 6, -6, 0})
    local b = torch.tensor({2, 2, -2, -2, 3, 3, -5})
    local av, bv = a:tolist(), b:tolist()
    local fd, md = {}, {}
    for i = 1, #av do fd[i] = av[i] // bv[i]; md[i] = av[i] % bv[i] end -- Lua = Python here
    check(a // b, "int64", {7}, fd)
    check(a % b, "int64", {7}, md)
    check(a:floor_divide(b), "int64", {7}, fd)
    check(a:remainder(b), "int64", {7}, md)
    -- hand-worked: -7 // 2 = -4, -7 % 2 = 1, 7 % -2 = -1
    assert.are.same({-4, 3, 3, -4, 2, -2, 0}, fd)
    assert.are.same({1, 1, -1, -1, 0, 0, 0}, md)
  end)
  it("integer // and % with Lua numbers on either side", function()
    local a = torch.tensor({-7, 7})
    check(a // 2, "int64", {2}, {-4, 3})
    check(a % -3, "int64", {2}, {-1, -2})
    check(20 // a, "int64", {2}, {-3, 2})
    check(20 % a, "int64", {2}, {-1, 6})
  end)
  it("integer // and % at the int64 limits", function()
    check(torch.tensor({math.mininteger}) // -1, "int64", {1}, {math.mininteger})
    check(torch.tensor({math.mininteger}) % -1, "int64", {1}, {0})
    check(torch.tensor({math.mininteger}) // 2, "int64", {1}, {math.mininteger // 2})
  end)
  it("float // and % follow the same rules", function()
    local av, bv = {-7.5, 7.5, -7.5, 7.5, 3.0, -0.5}, {2.0, 2.0, -2.0, -2.0, 0.75, 4.0}
    local fd, md = {}, {}
    for i = 1, #av do fd[i] = av[i] // bv[i]; md[i] = av[i] % bv[i] end
    -- hand-worked: -7.5 // 2 = -4, -7.5 % 2 = 0.5, 7.5 % -2 = -0.5
    assert.are.same({-4.0, 3.0, 3.0, -4.0, 4.0, -1.0}, fd)
    assert.are.same({0.5, 1.5, -1.5, -0.5, 0.0, 3.5}, md)
    for _, dtn in ipairs({"float32", "float64"}) do
      local a, b = torch.tensor(av, {dtype = torch[dtn]}), torch.tensor(bv, {dtype = torch[dtn]})
      check(a // b, dtn, {6}, fd)
      check(a % b, dtn, {6}, md)
    end
    check(torch.tensor({-3.5, 3.5}) % 2, "float32", {2}, {0.5, 1.5})
    check(5.5 // torch.tensor({2.0, -2.0}), "float32", {2}, {2.0, -3.0})
  end)
  it("float // 0 and % 0 give inf / nan, as PyTorch", function()
    local v = (torch.tensor({1.0, -1.0, 0.0}) // 0):tolist()
    assert.are.equal(math.huge, v[1])
    assert.are.equal(-math.huge, v[2])
    assert.is_true(H.isnan(v[3]))
    assert.is_true(H.isnan((torch.tensor({5.0}) % 0):item()))
  end)
  it("a float % keeps the sign of zero", function()
    local v = (torch.tensor({-0.0, 0.0}) % 2):tolist()
    assert.are.equal(-math.huge, 1 / v[1])
    assert.are.equal(math.huge, 1 / v[2])
  end)
  it("integer division by zero is an error (ZeroDivisionError) and changes nothing", function()
    local a = torch.tensor({5, 6})
    H.errors(function() return a // 0 end, "ZeroDivisionError")
    H.errors(function() return a % 0 end, "ZeroDivisionError")
    H.errors(function() return a // torch.tensor({1, 0}) end, "ZeroDivisionError")
    H.errors(function() return a:remainder(torch.tensor({0, 1})) end, "ZeroDivisionError")
    H.errors(function() a:floor_divide_(torch.tensor({1, 0})) end, "ZeroDivisionError")
    H.errors(function() a:remainder_(0) end, "ZeroDivisionError")
    H.assert_list_equal(a:tolist(), {5, 6})
    local s = torch.tensor({5}, {dtype = torch.int16})
    H.errors(function() return s // 0 end, "ZeroDivisionError")
  end)
  it("integer // and % of narrow types stay in their type", function()
    check(torch.tensor({-7}, {dtype = torch.int8}) // 2, "int8", {1}, {-4})
    check(torch.tensor({250}, {dtype = torch.uint8}) % 7, "uint8", {1}, {250 % 7})
  end)
end)

describe("pow", function()
  it("float ^ number and number ^ float tensor", function()
    check(torch.tensor({4.0, 9.0}) ^ 0.5, "float32", {2}, {2.0, 3.0})
    check(torch.tensor({1.5, -2.0}, {dtype = torch.float64}) ^ 3, "float64", {2}, {3.375, -8.0})
    check(2 ^ torch.tensor({1.0, 0.5}, {dtype = torch.float64}), "float64", {2}, {2.0, 2 ^ 0.5})
    check(torch.tensor({2.0}):pow(-1), "float32", {1}, {0.5})
    check(torch.pow(torch.tensor({3.0}), 2), "float32", {1}, {9.0})
  end)
  it("IEEE special cases", function()
    check(torch.tensor({0.0}) ^ -1, "float32", {1}, {math.huge})
    check(torch.tensor({0.0, 5.0}) ^ 0, "float32", {2}, {1.0, 1.0})
    assert.is_true(H.isnan((torch.tensor({-2.0}) ^ 0.5):item()))
  end)
  it("tensor ^ tensor broadcasts", function()
    check(torch.tensor({{2.0}, {3.0}}) ^ torch.tensor({1.0, 2.0}), "float32", {2, 2}, {{2.0, 4.0}, {3.0, 9.0}})
  end)
  it("integer pow stays integer and is exact", function()
    check(torch.tensor({2, 3, -2}) ^ 3, "int64", {3}, {8, 27, -8})
    check(torch.tensor({2}) ^ 62, "int64", {1}, {1 << 62})
    check(torch.tensor({7}) ^ 0, "int64", {1}, {1})
    check(2 ^ torch.tensor({1, 2, 3}), "int64", {3}, {2, 4, 8})
    check(torch.tensor({2, 3}) ^ torch.tensor({3, 2}), "int64", {2}, {8, 9})
  end)
  it("an integer tensor to a negative integer tensor power gives 0, 1 or -1 (PyTorch)", function()
    check(torch.tensor({2, 1, -1, -1}) ^ torch.tensor({-1, -5, -1, -2}), "int64", {4}, {0, 1, -1, 1})
  end)
  it("an integer tensor to a negative Lua integer is refused (PyTorch's message)", function()
    local x = torch.tensor({2, 3})
    H.errors(function() return x ^ -1 end, "Integers to negative integer powers are not allowed")
    H.errors(function() return x:pow(-2) end, "negative integer powers")
    H.errors(function() x:pow_(-1) end, "negative integer powers")
    H.assert_list_equal(x:tolist(), {2, 3})
  end)
  it("an integer tensor to a float power is float32", function()
    check(torch.tensor({4}) ^ 0.5, "float32", {1}, {2.0})
    check(torch.tensor({2}) ^ -1.0, "float32", {1}, {0.5})
    check(2.5 ^ torch.tensor({1, 2}), "float32", {2}, {2.5, 6.25})
  end)
end)

describe("clamp", function()
  local x = torch.tensor({-3.0, -0.5, 0.0, 0.5, 3.0})
  it("clamp(min, max)", function()
    check(x:clamp(-1, 1), "float32", {5}, {-1.0, -0.5, 0.0, 0.5, 1.0})
    check(torch.clamp(x, -1, 1), "float32", {5}, {-1.0, -0.5, 0.0, 0.5, 1.0})
  end)
  it("clamp with only a min or only a max", function()
    check(x:clamp(0), "float32", {5}, {0.0, 0.0, 0.0, 0.5, 3.0})
    check(x:clamp(nil, 0), "float32", {5}, {-3.0, -0.5, 0.0, 0.0, 0.0})
    check(x:clamp({min = 0.25}), "float32", {5}, {0.25, 0.25, 0.25, 0.5, 3.0})
    check(x:clamp({max = -1}), "float32", {5}, {-3.0, -1.0, -1.0, -1.0, -1.0})
    check(x:clip(-2, 2), "float32", {5}, {-2.0, -0.5, 0.0, 0.5, 2.0})
  end)
  it("when min > max every value is max (PyTorch: min(max(x, lo), hi))", function()
    check(torch.tensor({1.0, 5.0}):clamp(3, 2), "float32", {2}, {2.0, 2.0})
    check(torch.tensor({1, 5}):clamp(3, 2), "int64", {2}, {2, 2})
  end)
  it("NaN stays NaN", function()
    assert.is_true(H.isnan(torch.tensor({0 / 0}):clamp(0, 1):item()))
  end)
  it("clamp of integers with integer bounds stays integer", function()
    check(torch.tensor({-5, 0, 5}):clamp(-2, 2), "int64", {3}, {-2, 0, 2})
    check(torch.tensor({1, 200}, {dtype = torch.uint8}):clamp(10, 100), "uint8", {2}, {10, 100})
  end)
  it("clamp of an integer tensor with a fractional bound promotes to float32", function()
    check(torch.tensor({1, 2, 3}):clamp(1.5), "float32", {3}, {1.5, 2.0, 3.0})
  end)
  it("clamp_ works in place on views", function()
    local m = torch.tensor({{-5.0, 5.0}, {-5.0, 5.0}})
    m[{{}, 2}]:clamp_(0, 1)
    H.assert_list_equal(m:tolist(), {{-5.0, 1.0}, {-5.0, 1.0}})
  end)
  it("clamp without bounds is an error", function()
    H.errors(function() return x:clamp() end, "At least one of 'min' or 'max'")
  end)
end)

describe("in-place arithmetic", function()
  it("add_ / sub_ / mul_ / div_ return the tensor itself", function()
    local x = torch.tensor({1.0, 2.0})
    assert.is_true(rawequal(x, x:add_(1)))
    assert.is_true(rawequal(x, x:sub_(0.5)))
    assert.is_true(rawequal(x, x:mul_(4)))
    assert.is_true(rawequal(x, x:div_(2)))
    H.assert_list_equal(x:tolist(), {3.0, 5.0})
  end)
  it("add_ and sub_ take alpha (number or {alpha=})", function()
    local x = torch.tensor({1.0, 2.0})
    x:add_(torch.tensor({1.0, 1.0}), 10)
    H.assert_list_equal(x:tolist(), {11.0, 12.0})
    x:sub_(torch.tensor({1.0, 2.0}), {alpha = 2})
    H.assert_list_equal(x:tolist(), {9.0, 8.0})
    x:add_(3, 2)
    H.assert_list_equal(x:tolist(), {15.0, 14.0})
    local i = torch.tensor({1, 2})
    i:add_(torch.tensor({1, 1}), 5)
    H.assert_list_equal(i:tolist(), {6, 7})
  end)
  it("in-place ops broadcast the other operand", function()
    local x = torch.zeros(2, 3)
    x:add_(torch.tensor({1.0, 2.0, 3.0}))
    x:mul_(torch.tensor({{1.0}, {10.0}}))
    H.assert_list_equal(x:tolist(), {{1.0, 2.0, 3.0}, {10.0, 20.0, 30.0}})
  end)
  it("in-place ops on a non-contiguous view change only the view's elements", function()
    local m = torch.ones(3, 3)
    m:t()[2]:mul_(7) -- column 2
    m[{{}, 3}]:add_(torch.tensor({1.0, 2.0, 3.0}))
    H.assert_list_equal(m:tolist(), {{1.0, 7.0, 2.0}, {1.0, 7.0, 3.0}, {1.0, 7.0, 4.0}})
  end)
  it("in-place ops on narrower dtypes compute and store in the dtype", function()
    local h = torch.tensor({1.0, 2.0}, {dtype = torch.float16})
    h:mul_(0.1)
    -- 1 * 0.1 -> float16 0.0999755859375, 2 * 0.1 -> 0.199951171875
    H.assert_list_equal(h:tolist(), {0.0999755859375, 0.199951171875})
    local s = torch.tensor({10}, {dtype = torch.int16})
    s:mul_(torch.tensor({3}))
    check(s, "int16", {1}, {30})
  end)
  it("a float result cannot go into an integer tensor", function()
    local x = torch.tensor({1, 2, 3})
    H.errors(function() x:add_(torch.tensor({1.0, 2.0, 3.0})) end, "result type Float can't be cast to the desired output type Long")
    H.errors(function() x:add_(2.5) end, "can't be cast")
    H.errors(function() x:div_(2) end, "can't be cast")
    H.errors(function() x:mul_(torch.tensor(1.5)) end, "can't be cast")
    H.assert_list_equal(x:tolist(), {1, 2, 3})
  end)
  it("a broadcast that would grow the target is an error", function()
    local x = torch.ones(3)
    H.errors(function() x:add_(torch.ones(2, 3)) end, "output with shape [3] doesn't match the broadcast shape [2, 3]")
    H.assert_list_equal(x:tolist(), {1.0, 1.0, 1.0})
  end)
  it("a float tensor may take an integer operand in place", function()
    local x = torch.tensor({0.5})
    x:add_(torch.tensor({2}))
    H.assert_list_equal(x:tolist(), {2.5})
  end)
  it("a float alpha with integer tensors is refused, as in PyTorch", function()
    local x, y = torch.tensor({1, 2}), torch.tensor({1, 1})
    H.errors(function() return x:add(y, 2.5) end, "alpha must not be a floating point number")
    H.errors(function() return x:sub(y, {alpha = 0.5}) end, "alpha")
    H.errors(function() x:add_(y, 2.5) end, "alpha")
    H.assert_list_equal(x:tolist(), {1, 2})
  end)
  it("in-place unary ops on float16, on transposed views and on int32", function()
    local h = torch.tensor({0.5, 1.0}, {dtype = torch.float16})
    h:exp_()
    H.assert_list_equal(h:tolist(), {1.6484375, 2.71875}) -- float16(e^0.5), float16(e)
    local m = torch.tensor({{1.0, 4.0}, {9.0, 16.0}})
    m:t():sqrt_()
    H.assert_list_equal(m:tolist(), {{1.0, 2.0}, {3.0, 4.0}})
    m[{{}, 2}]:neg_()
    H.assert_list_equal(m:tolist(), {{1.0, -2.0}, {3.0, -4.0}})
    local i = torch.tensor({-3, 4}, {dtype = torch.int32})
    i:abs_()
    H.assert_list_equal(i:tolist(), {3, 4})
    i:neg_()
    check(i, "int32", {2}, {-3, -4})
    local b = torch.tensor({true, false})
    b:logical_not_()
    H.assert_list_equal(b:tolist(), {false, true})
  end)
  it("x:add_(x) with itself", function()
    local x = torch.tensor({1.0, 2.0, 3.0})
    x:add_(x)
    H.assert_list_equal(x:tolist(), {2.0, 4.0, 6.0})
  end)
end)

describe("fill_, zero_ and copy_", function()
  it("fill_ with numbers, booleans and a 0-d tensor", function()
    local x = torch.zeros(2, 2)
    assert.is_true(rawequal(x, x:fill_(2.5)))
    H.assert_list_equal(x:tolist(), {{2.5, 2.5}, {2.5, 2.5}})
    x:fill_(torch.tensor(4))
    H.assert_list_equal(x:tolist(), {{4.0, 4.0}, {4.0, 4.0}})
    local b = torch.zeros(2, {dtype = torch.bool}):fill_(true)
    H.assert_list_equal(b:tolist(), {true, true})
  end)
  it("fill_ converts to the tensor's dtype", function()
    H.assert_list_equal(torch.zeros(2, {dtype = torch.int64}):fill_(2.7):tolist(), {2, 2})
    H.errors(function() torch.zeros(1, {dtype = torch.uint8}):fill_(-1) end, "value cannot be converted to type uint8 without overflow")
    H.assert_list_equal(torch.zeros(1, {dtype = torch.float16}):fill_(0.1):tolist(), {0.0999755859375})
  end)
  it("fill_ of a view fills only the view", function()
    local x = torch.zeros(3, 3)
    x[{{}, 2}]:fill_(1)
    x[3]:fill_(2)
    H.assert_list_equal(x:tolist(), {{0.0, 1.0, 0.0}, {0.0, 1.0, 0.0}, {2.0, 2.0, 2.0}})
  end)
  it("fill_ with a non-0-d tensor is an error", function()
    H.errors(function() torch.zeros(2):fill_(torch.ones(2)) end, "0-dimension")
  end)
  it("zero_ zeroes every dtype and returns self", function()
    for _, name in ipairs({"float32", "float64", "float16", "int64", "int8", "uint8", "bool"}) do
      local x = torch.ones(3, {dtype = torch[name]})
      assert.is_true(rawequal(x, x:zero_()))
      assert.is_true(x:eq(0):all():item(), name)
    end
  end)
  it("copy_ copies values into an existing tensor", function()
    local x = torch.zeros(2, 2)
    local y = torch.tensor({{1.0, 2.0}, {3.0, 4.0}})
    assert.is_true(rawequal(x, x:copy_(y)))
    H.assert_list_equal(x:tolist(), {{1.0, 2.0}, {3.0, 4.0}})
    y[1] = 9 -- no sharing
    H.assert_list_equal(x:tolist(), {{1.0, 2.0}, {3.0, 4.0}})
  end)
  it("copy_ broadcasts the source", function()
    local x = torch.zeros(3, 2)
    x:copy_(torch.tensor({5.0, 6.0}))
    H.assert_list_equal(x:tolist(), {{5.0, 6.0}, {5.0, 6.0}, {5.0, 6.0}})
    x:copy_(torch.tensor(1.5))
    H.assert_list_equal(x:tolist(), {{1.5, 1.5}, {1.5, 1.5}, {1.5, 1.5}})
  end)
  it("copy_ converts dtypes", function()
    local i = torch.zeros(3, {dtype = torch.int32})
    i:copy_(torch.tensor({1.9, -1.9, 300.0}))
    H.assert_list_equal(i:tolist(), {1, -1, 300})
    local f = torch.zeros(2, {dtype = torch.float64})
    f:copy_(torch.tensor({true, false}))
    H.assert_list_equal(f:tolist(), {1.0, 0.0})
    local b = torch.zeros(2, {dtype = torch.bool})
    b:copy_(torch.tensor({0.0, -2.0}))
    H.assert_list_equal(b:tolist(), {false, true})
  end)
  it("copy_ into a transposed view and from a transposed source", function()
    local x = torch.zeros(2, 3)
    x:t():copy_(torch.tensor({{1, 2}, {3, 4}, {5, 6}}))
    H.assert_list_equal(x:tolist(), {{1.0, 3.0, 5.0}, {2.0, 4.0, 6.0}})
    local y = torch.zeros(3, 2)
    y:copy_(x:t())
    H.assert_list_equal(y:tolist(), {{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}})
  end)
  it("copy_ of a source that cannot broadcast is an error and changes nothing", function()
    local x = torch.zeros(2, 3)
    H.errors(function() x:copy_(torch.ones(2)) end, "expanded size")
    H.errors(function() x:copy_(torch.ones(3, 3)) end, "must match")
    H.assert_list_equal(x:tolist(), {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}})
  end)
  it("copy_ of a large tensor (parallel path) is exact", function()
    local n = 100003
    local x = torch.empty(n, {dtype = torch.float64})
    x:copy_(torch.arange(n))
    assert.are.equal(n * (n - 1) / 2, x:sum():item())
    assert.are.equal(n - 1.0, x[n]:item())
  end)
end)

describe("large inputs (the parallel paths)", function()
  -- 257 x 300 = 77100 elements, above the 32768-element parallel grain
  local R, C = 257, 300
  local function base(dt) return torch.arange(R * C, {dtype = dt or torch.float64}):view(R, C) end
  -- the Lua value of base()[i][j]
  local function v(i, j) return (i - 1) * C + (j - 1) + 0.0 end

  it("a transposed operand with a broadcast row: every element", function()
    local t = base():t() -- [C, R], non-contiguous
    local row = torch.arange(R, {dtype = torch.float64}) * 0.5
    local got = (t * 2 + row):tolist()
    assert.are.equal(C, #got)
    for j = 1, C do for i = 1, R do
      if got[j][i] ~= v(i, j) * 2 + (i - 1) * 0.5 then
        error(string.format("element [%d][%d]: got %s", j, i, tostring(got[j][i])))
      end
    end end
  end)
  it("unary ops, comparisons and conversions of a large strided view", function()
    local t = base():t()[{{}, {1, R, 2}}] -- every other column of the transpose: [C, 129]
    local n = t:neg():tolist()
    local g = t:gt(40000):tolist()
    local f = t:float():tolist()
    local count = 0
    for j = 1, C do for k = 1, 129 do
      local want = v(2 * k - 1, j)
      assert.are.equal(-want, n[j][k])
      assert.are.equal(want > 40000, g[j][k])
      assert.are.equal(H.f32(want), f[j][k])
      if want > 40000 then count = count + 1 end
    end end
    assert.are.equal(count, t:gt(40000):sum():item())
  end)
  it("in-place ops and copy_ into a large transposed view", function()
    local x = base()
    x:t():add_(torch.arange(R, {dtype = torch.float64})) -- x[i][j] += i - 1
    x:t()[{{}, {1, 10}}]:mul_(-1) -- rows 1..10 of x negated
    local got = x:tolist()
    for i = 1, R, 3 do for j = 1, C do
      local want = v(i, j) + (i - 1)
      if i <= 10 then want = -want end
      assert.are.equal(want, got[i][j])
    end end
    local y = torch.zeros(C, R, {dtype = torch.float64})
    y:copy_(base():t())
    assert.is_true(y:equal(base():t()))
    assert.is_true(y:is_contiguous())
  end)
  it("per-dim reductions of a large strided view", function()
    local t = base():t() -- [C, R]
    local s1, s2 = t:sum(1):tolist(), t:sum(2):tolist()
    for i = 1, R do
      -- sum over j of v(i, j) = C * (i - 1) * C + C (C - 1) / 2
      assert.are.equal(C * (i - 1) * C + C * (C - 1) / 2, s1[i])
    end
    for j = 1, C do
      assert.are.equal(C * R * (R - 1) / 2 + R * (j - 1), s2[j])
    end
    local mx, idx = t:max(2)
    H.assert_list_equal(idx:tolist(), H.map(H.range(C), function() return R end))
    assert.are.equal(v(R, C), mx[C]:item())
  end)
  it("results do not depend on the number of threads (GSHELL_NUM_THREADS)", function()
    -- integer results, so the checksums are exact whatever the split
    local code = [[
      local torch = require("torch")
      local x = torch.arange(257 * 300):view(257, 300)
      local y = (x:t() * 3 - 7) % 1000 + x:t():gt(30000)
      local z = (torch.arange(257 * 300, {dtype = torch.float64}):view(300, 257):t() * 0.5):floor():long()
      local zz = torch.zeros(300, 257, {dtype = torch.int32}):t()
      zz:copy_(z)
      print(y:sum():item(), y:max(2):sum():item(), (x // 7):sum():item(), z:sum():item(), zz:sum():item())
    ]]
    local one = H.run_lua(code, {GSHELL_NUM_THREADS = 1})
    local many = H.run_lua(code, {GSHELL_NUM_THREADS = 5})
    assert.truthy(one:match("^%-?%d+"), one)
    assert.are.equal(one, many)
  end)
end)
