-- Reductions: sum/mean/prod/max/min/argmax/argmin/std/var over the whole
-- tensor and per dim (keepdim), 1-based indices, norm(p), all/any,
-- softmax/log_softmax, equal and allclose. References are computed in Lua
-- doubles from the same data.
local torch = require("torch")
local H = require("helpers")

local check, f32 = H.check, H.f32

-- Known bugs in files this suite may not fix (name -> what is wrong).
-- (var/all/softmax computing std/any/log_softmax was fixed in d24eb90.)
local KNOWN = {}
local it = H.it_unless(KNOWN, it, pending)

-- a 3 x 4 matrix of exact float32 values and its Lua copy
local D = {{1.5, -2.0, 3.25, 0.5}, {4.0, 0.25, -1.0, 2.0}, {-3.5, 6.0, 1.0, -0.75}}
local function X(dt) return torch.tensor(D, {dtype = dt or torch.float64}) end

-- Lua reductions over rows (dim 1) or columns (dim 2) of a 2-d list
local function reduce2(t, dim, f, init)
  local r = {}
  if dim == 1 then
    for j = 1, #t[1] do
      local acc = init
      for i = 1, #t do acc = f(acc, t[i][j], i) end
      r[j] = acc
    end
  else
    for i = 1, #t do
      local acc = init
      for j = 1, #t[i] do acc = f(acc, t[i][j], j) end
      r[i] = acc
    end
  end
  return r
end
local function add(a, b) return a + b end
local function ref_sum(t, dim) return reduce2(t, dim, add, 0.0) end
local function ref_all(t, f, init)
  local acc = init
  for _, v in ipairs(H.flat(t)) do acc = f(acc, v) end
  return acc
end
local function ref_var(vals, correction)
  local n, s = #vals, 0.0
  for _, v in ipairs(vals) do s = s + v end
  local m, ss = s / n, 0.0
  for _, v in ipairs(vals) do ss = ss + (v - m) ^ 2 end
  return ss / (n - correction)
end
local function col(t, j) local r = {} for i = 1, #t do r[i] = t[i][j] end return r end

describe("sum", function()
  it("over the whole tensor gives a 0-d tensor", function()
    check(X():sum(), "float64", {}, ref_all(D, add, 0.0))
    check(X(torch.float32):sum(), "float32", {}, f32(ref_all(D, add, 0.0)))
  end)
  it("per dim, 1-based and negative", function()
    check(X():sum(1), "float64", {4}, ref_sum(D, 1))
    check(X():sum(2), "float64", {3}, ref_sum(D, 2))
    check(X():sum(-1), "float64", {3}, ref_sum(D, 2))
    check(X():sum(-2), "float64", {4}, ref_sum(D, 1))
  end)
  it("keepdim keeps the reduced dim as 1 (positional or options)", function()
    local s1 = ref_sum(D, 1)
    check(X():sum(1, true), "float64", {1, 4}, {s1})
    check(X():sum({dim = 2, keepdim = true}), "float64", {3, 1}, H.map(ref_sum(D, 2), function(v) return {v} end))
    check(X():sum({dim = 1}), "float64", {4}, s1)
  end)
  it("of a 3-d tensor along each dim", function()
    local x = torch.arange(24):view(2, 3, 4)
    local v = x:tolist()
    local s1, s2, s3 = {}, {}, {}
    for j = 1, 3 do s1[j] = {} for k = 1, 4 do s1[j][k] = v[1][j][k] + v[2][j][k] end end
    for i = 1, 2 do s2[i] = {} for k = 1, 4 do s2[i][k] = v[i][1][k] + v[i][2][k] + v[i][3][k] end end
    for i = 1, 2 do s3[i] = {} for j = 1, 3 do s3[i][j] = v[i][j][1] + v[i][j][2] + v[i][j][3] + v[i][j][4] end end
    check(x:sum(1), "int64", {3, 4}, s1)
    check(x:sum(2), "int64", {2, 4}, s2)
    check(x:sum(3), "int64", {2, 3}, s3)
    check(x:sum(2, true), "int64", {2, 1, 4}, H.map(s2, function(r) return r end) and {{s2[1]}, {s2[2]}})
    check(x:sum(), "int64", {}, 276)
  end)
  it("of a non-contiguous view", function()
    local t = X():t()
    check(t:sum(1), "float64", {3}, ref_sum(D, 2))
    check(t:sum(2), "float64", {4}, ref_sum(D, 1))
    check(X()[{{}, {2, 3}}]:sum(), "float64", {}, -2.0 + 3.25 + 0.25 - 1.0 + 6.0 + 1.0)
  end)
  it("integers and bools sum to int64", function()
    check(torch.tensor({1, 2, 3}, {dtype = torch.int8}):sum(), "int64", {}, 6)
    check(torch.tensor({true, false, true}):sum(), "int64", {}, 2)
    check(torch.tensor({{1, 2}, {3, 4}}, {dtype = torch.int32}):sum(1), "int64", {2}, {4, 6})
  end)
  it("float16 sums stay float16 (PyTorch)", function()
    check(torch.tensor({1.0, 2.0}, {dtype = torch.float16}):sum(), "float16", {}, 3.0)
  end)
  it("of an empty tensor is 0; a 0-d tensor sums to itself along dim 1", function()
    check(torch.zeros(0):sum(), "float32", {}, 0.0)
    check(torch.zeros(2, 0):sum(2), "float32", {2}, {0.0, 0.0})
    check(torch.zeros(0, 3):sum(1), "float32", {3}, {0.0, 0.0, 0.0})
    check(torch.tensor(5.0):sum(1), "float32", {}, 5.0)
    check(torch.tensor(5.0):sum(1, true), "float32", {}, 5.0)
  end)
  it("a large float32 sum is accurate (compared with a double sum)", function()
    local n = 1000003
    local x = torch.full({n}, 0.1)
    local want = n * f32(0.1)
    H.assert_close({x:sum():item()}, {want}, 1e-6, 0)
    H.assert_close({x:mean():item()}, {f32(0.1)}, 1e-6, 0)
    -- a large per-dim sum too
    local m = torch.full({1000, 1001}, 0.1)
    H.assert_close(m:sum(2):tolist(), H.map(H.range(1000), function() return f32(1001 * f32(0.1)) end), 1e-6, 0)
    H.assert_close({m:sum(1)[1]:item()}, {f32(1000 * f32(0.1))}, 1e-6, 0)
  end)
  it("torch.sum(x, d) is x:sum(d)", function()
    check(torch.sum(X(), 2), "float64", {3}, ref_sum(D, 2))
  end)
end)

describe("mean", function()
  it("whole and per dim", function()
    check(X():mean(), "float64", {}, ref_all(D, add, 0.0) / 12, 1e-15, 0)
    check(X():mean(1), "float64", {4}, H.map(ref_sum(D, 1), function(v) return v / 3 end), 1e-15, 0)
    check(X():mean(2, true), "float64", {3, 1}, H.map(ref_sum(D, 2), function(v) return {v / 4} end), 1e-15, 0)
  end)
  it("keeps float32, float16 and bfloat16", function()
    assert.are.equal("float32", H.dtype(X(torch.float32):mean()))
    assert.are.equal("float16", H.dtype(torch.ones(3, {dtype = torch.float16}):mean()))
    assert.are.equal("bfloat16", H.dtype(torch.ones(3, {dtype = torch.bfloat16}):mean()))
  end)
  it("of an integer tensor is refused, as in PyTorch", function()
    H.errors(function() return torch.tensor({1, 2}):mean() end, {"mean(): could not infer output dtype", "Long"})
  end)
  it("of an empty tensor is NaN", function()
    assert.is_true(H.isnan(torch.zeros(0):mean():item()))
  end)
end)

describe("prod", function()
  it("whole and per dim", function()
    local p = ref_all(D, function(a, b) return a * b end, 1.0)
    check(X():prod(), "float64", {}, p)
    check(X():prod(1), "float64", {4}, reduce2(D, 1, function(a, b) return a * b end, 1.0))
    check(X():prod(2, true), "float64", {3, 1}, H.map(reduce2(D, 2, function(a, b) return a * b end, 1.0), function(v) return {v} end))
  end)
  it("integers and bools give int64; overflow wraps", function()
    check(torch.tensor({2, 3, 4}, {dtype = torch.int8}):prod(), "int64", {}, 24)
    check(torch.tensor({true, false}):prod(), "int64", {}, 0)
    check(torch.tensor({1 << 32, 1 << 32}):prod(), "int64", {}, 0)
  end)
  it("of an empty tensor is 1; float32 overflow is inf", function()
    check(torch.zeros(0):prod(), "float32", {}, 1.0)
    check(torch.tensor({1e30, 1e30}):prod(), "float32", {}, math.huge)
  end)
end)

describe("max, min, argmax, argmin", function()
  local M = {{1.0, 5.0, 5.0}, {7.0, 7.0, 2.0}}
  it("whole-tensor max and min are 0-d values", function()
    check(X():max(), "float64", {}, 6.0)
    check(X():min(), "float64", {}, -3.5)
    check(torch.tensor({3, -9, 4}):max(), "int64", {}, 4)
    check(torch.tensor({3, -9, 4}, {dtype = torch.int16}):min(), "int16", {}, -9)
  end)
  it("max(d) returns values and 1-based indices", function()
    local v, i = X():max(2)
    check(v, "float64", {3}, {3.25, 4.0, 6.0})
    check(i, "int64", {3}, {3, 1, 2})
    local v1, i1 = X():max(1)
    check(v1, "float64", {4}, {4.0, 6.0, 3.25, 2.0})
    check(i1, "int64", {4}, {2, 3, 1, 2})
  end)
  it("min(d) returns values and 1-based indices, keepdim", function()
    local v, i = X():min(1, true)
    check(v, "float64", {1, 4}, {{-3.5, -2.0, -1.0, -0.75}})
    check(i, "int64", {1, 4}, {{3, 1, 2, 3}})
    local v2, i2 = X():min(-1)
    check(v2, "float64", {3}, {-2.0, -1.0, -3.5})
    check(i2, "int64", {3}, {2, 3, 1})
  end)
  it("ties give the first index", function()
    local v, i = torch.tensor(M):max(2)
    check(v, "float32", {2}, {5.0, 7.0})
    check(i, "int64", {2}, {2, 1})
    local _, j = torch.tensor(M):min(1)
    check(j, "int64", {3}, {1, 1, 2})
    check(torch.tensor({3, 1, 3}):argmax(), "int64", {}, 1)
    check(torch.tensor({1, 0, 0}):argmin(), "int64", {}, 2)
  end)
  it("the indices from max(d) select the values", function()
    local x = X()
    local v, i = x:max(2)
    for r = 1, 3 do assert.are.equal(v[r]:item(), x[{r, i[r]:item()}]:item()) end
  end)
  it("argmax / argmin over the whole tensor give the 1-based flat index", function()
    check(X():argmax(), "int64", {}, 10) -- 6.0 at row 3, column 2
    check(X():argmin(), "int64", {}, 9)  -- -3.5 at row 3, column 1
    check(X():t():argmax(), "int64", {}, 6) -- transposed: row 2, column 3 of 4 x 3
  end)
  it("argmax(d) / argmin(d) with keepdim", function()
    check(X():argmax(2), "int64", {3}, {3, 1, 2})
    check(X():argmin(1, true), "int64", {1, 4}, {{3, 1, 2, 3}})
    check(torch.tensor({{1, 2}, {3, 4}}):argmax(2, true), "int64", {2, 1}, {{2}, {2}})
  end)
  it("NaN wins max and min and its index is returned", function()
    local x = torch.tensor({1.0, 0 / 0, 0.0})
    assert.is_true(H.isnan(x:max():item()))
    assert.is_true(H.isnan(x:min():item()))
    check(x:argmax(), "int64", {}, 2)
    check(x:argmin(), "int64", {}, 2)
    local v, i = x:max(1)
    assert.is_true(H.isnan(v:item()))
    check(i, "int64", {}, 2)
  end)
  it("a 0-d tensor reduces to itself with index 1", function()
    local v, i = torch.tensor(5.0):max(1)
    check(v, "float32", {}, 5.0)
    check(i, "int64", {}, 1)
  end)
  it("on an empty tensor: whole-tensor max is an error, an empty dim too", function()
    H.errors(function() return torch.zeros(0):max() end, "numel() == 0")
    H.errors(function() return torch.zeros(0, 3):max(1) end, "non-zero size")
    H.errors(function() return torch.zeros(0):argmax() end, "numel() == 0")
    local v, i = torch.zeros(0, 3):max(2)
    check(v, "float32", {0}, {})
    check(i, "int64", {0}, {})
  end)
  it("large per-dim max (parallel path) matches the Lua maximum", function()
    local data = H.data({257, 300}, 5)
    local x = torch.tensor(data)
    local v, i = x:max(2)
    local vl, il = v:tolist(), i:tolist()
    for r = 1, 257 do
      local best, at = -math.huge, 0
      for c = 1, 300 do if data[r][c] > best then best, at = data[r][c], c end end
      assert.are.equal(best, vl[r])
      assert.are.equal(at, il[r])
    end
  end)
end)

describe("max, min, prod down columns (tiles of neighbouring columns, read row by row)", function()
  -- inner 1100: two tiles of up to 1024 columns, each in stretches of 256;
  -- values from a small set so that ties are common (the first index wins),
  -- and a NaN planted in some columns (NaN wins, its index is returned)
  it("match a Lua reference along dim 1 of {37, 1100} and dim 2 of {3, 50, 300}", function()
    for _, case in ipairs({ { { 37, 1100 }, 1 }, { { 3, 50, 300 }, 2 } }) do
      local shape, d = case[1], case[2]
      local data = H.idata(shape, 11, -4, 4)
      local x = torch.tensor(data, { dtype = torch.float64 })
      local outer, r, inner = 1, shape[d], 1
      for k = 1, d - 1 do outer = outer * shape[k] end
      for k = d + 1, #shape do inner = inner * shape[k] end
      local flat = x:reshape(outer, r, inner)
      -- plant NaNs in every 7th column, at a row that is not the first
      for c = 1, inner, 7 do flat[{ 1, (c % r) + 1, c }] = 0 / 0 end
      local fl = flat:tolist()
      local vmax, imax = flat:max(2)
      local vmin, imin = flat:min(2)
      local vm, im, vn, inn, pr = vmax:tolist(), imax:tolist(), vmin:tolist(), imin:tolist(), flat:prod(2):tolist()
      local amax = flat:argmax(2):tolist()
      for o = 1, outer do
        for c = 1, inner do
          local bm, bi, sm, si, p = nil, 0, nil, 0, 1.0
          for i = 1, r do
            local v = fl[o][i][c]
            p = p * v
            if bi == 0 or v > bm or (v ~= v and bm == bm) then bm, bi = v, i end
            if si == 0 or v < sm or (v ~= v and sm == sm) then sm, si = v, i end
          end
          local where = ("shape %s dim %d, [%d, %d]"):format(table.concat(shape, "x"), d, o, c)
          if bm ~= bm then assert.is_true(vm[o][c] ~= vm[o][c], where) else assert.are.equal(bm, vm[o][c], where) end
          if sm ~= sm then assert.is_true(vn[o][c] ~= vn[o][c], where) else assert.are.equal(sm, vn[o][c], where) end
          assert.are.equal(bi, im[o][c], where)
          assert.are.equal(bi, amax[o][c], where)
          assert.are.equal(si, inn[o][c], where)
          if p == p then assert.are.equal(p, pr[o][c], where) end
        end
      end
    end
  end)

  it("int64 sums and maxima down columns of {5, 1500}", function()
    local data = H.idata({ 5, 1500 }, 3, -1000, 1000)
    local x = torch.tensor(data, { dtype = torch.int64 })
    local s, m = x:sum(1):tolist(), x:max(1):tolist()
    for c = 1, 1500 do
      local ws, wm = 0, data[1][c]
      for i = 1, 5 do ws = ws + data[i][c]; if data[i][c] > wm then wm = data[i][c] end end
      assert.are.equal(ws, s[c])
      assert.are.equal(wm, m[c])
    end
  end)
end)

describe("whole-tensor max, min, argmax, argmin (vector blocks, parallel chunks)", function()
  -- The whole-tensor scan runs in 2048-element blocks of 8-wide lanes,
  -- over 16 chunks in parallel from 4 * 131072 elements on: it must give
  -- the sequential answer (the first NaN wins, else the extreme at its
  -- first position, -0.0 and 0.0 as they come) at every size, with the
  -- extreme or a NaN in any block, chunk or tail.
  local function reference(l, is_max)
    local best, at = l[1], 1
    for i = 2, #l do
      local v = l[i]
      if best == best and (v ~= v or (is_max and v > best) or (not is_max and v < best)) then best, at = v, i end
    end
    return best, at
  end
  local function same(want, got, what)
    if want ~= want then assert.is_true(got ~= got, what) else
      assert.are.equal(want, got, what)
      assert.are.equal(1 / want, 1 / got, what .. " (sign of zero)")
    end
  end
  local sizes = { 1, 7, 29, 2048 * 3 + 7, 2 * 4 * 131072 + 13 }
  for _, dt in ipairs({ "float32", "float64", "int64" }) do
    for _, n in ipairs(sizes) do
      it(("%s, %d elements: ties, planted extremes, NaNs, signed zeros"):format(dt, n), function()
        torch.manual_seed(n)
        local x = torch.randint(-4, 5, { n }):to(torch[dt])
        local cases = { { "ties", function() end } }
        cases[#cases + 1] = { "a late maximum and minimum", function()
          x[math.max(1, n - 3)] = 50; x[math.max(1, n // 2)] = 50; x[math.max(1, n - 1)] = -50
        end }
        if dt ~= "int64" then
          cases[#cases + 1] = { "signed zeros only", function() x:zero_(); if n > 5 then x[3] = -0.0; x[n] = -0.0 end end }
          cases[#cases + 1] = { "NaNs late, then early", function()
            x[n] = 0 / 0
            if n > 100 then x[n - 70] = 0 / 0; x[2049] = 0 / 0 end
          end }
        end
        for _, case in ipairs(cases) do
          case[2]()
          local l = x:tolist()
          local mx, imx = reference(l, true)
          local mn, imn = reference(l, false)
          local what = ("%s n=%d %s"):format(dt, n, case[1])
          same(mx, x:max():item(), what .. " max")
          same(mn, x:min():item(), what .. " min")
          assert.are.equal(imx, x:argmax():item(), what .. " argmax")
          assert.are.equal(imn, x:argmin():item(), what .. " argmin")
        end
      end)
    end
  end
end)

describe("std and var", function()
  local flat = H.flat(D)
  it("var over the whole tensor (unbiased)", function()
    check(X():var(), "float64", {}, ref_var(flat, 1), 1e-14, 0)
    check(X(torch.float32):var(), "float32", {}, f32(ref_var(flat, 1)), 1e-6, 0)
  end)
  it("var per dim with keepdim", function()
    local want = {}
    for j = 1, 4 do want[j] = ref_var(col(D, j), 1) end
    check(X():var(1), "float64", {4}, want, 1e-14, 0)
    check(X():var(1, true), "float64", {1, 4}, {want}, 1e-14, 0)
    check(X():var(2), "float64", {3}, H.map({1, 2, 3}, function(i) return ref_var(D[i], 1) end), 1e-14, 0)
  end)
  it("var with correction / unbiased options", function()
    check(X():var({unbiased = false}), "float64", {}, ref_var(flat, 0), 1e-14, 0)
    check(X():var({correction = 0}), "float64", {}, ref_var(flat, 0), 1e-14, 0)
    check(X():var({dim = 2, correction = 2}), "float64", {3},
          H.map({1, 2, 3}, function(i) return ref_var(D[i], 2) end), 1e-14, 0)
  end)
  it("std over the whole tensor and per dim", function()
    check(X():std(), "float64", {}, math.sqrt(ref_var(flat, 1)), 1e-14, 0)
    local want = {}
    for j = 1, 4 do want[j] = math.sqrt(ref_var(col(D, j), 1)) end
    check(X():std(1), "float64", {4}, want, 1e-14, 0)
    check(X():std(2, true), "float64", {3, 1}, H.map({1, 2, 3}, function(i) return {math.sqrt(ref_var(D[i], 1))} end), 1e-14, 0)
    check(X():std({unbiased = false}), "float64", {}, math.sqrt(ref_var(flat, 0)), 1e-14, 0)
  end)
  it("std is the square root of var", function()
    local x = X()
    H.assert_close(x:std(2):tolist(), x:var(2):sqrt():tolist(), 1e-15, 0)
  end)
  it("std of one element is NaN (n - 1 = 0), as PyTorch", function()
    assert.is_true(H.isnan(torch.tensor({1.0}):std():item()))
  end)
  it("std of an integer tensor is refused", function()
    H.errors(function() return torch.tensor({1, 2}):std() end, "floating point")
  end)
  it("std of a large float32 tensor with a big mean has no cancellation", function()
    -- values 1e4 + {0, 1, 2, 3} repeated: population var 1.25 exactly
    local vals = {}
    for i = 1, 40000 do vals[i] = 10000.0 + (i - 1) % 4 end
    local s = torch.tensor(vals):std({unbiased = false}):item()
    H.assert_close({s}, {math.sqrt(1.25)}, 1e-5, 0)
  end)
end)

describe("norm", function()
  local v = torch.tensor({3.0, -4.0, 0.0, 12.0})
  it("default is the 2-norm (and 'fro')", function()
    check(v:norm(), "float32", {}, 13.0)
    check(v:norm("fro"), "float32", {}, 13.0)
    check(torch.tensor({{3.0, 4.0}, {0.0, 0.0}}, {dtype = torch.float64}):norm(), "float64", {}, 5.0)
  end)
  it("p = 1, inf, -inf, 0 and fractional/other p", function()
    check(v:norm(1), "float32", {}, 19.0)
    check(v:norm(math.huge), "float32", {}, 12.0)
    check(v:norm("inf"), "float32", {}, 12.0)
    check(v:norm(-math.huge), "float32", {}, 0.0)
    check(v:norm(0), "float32", {}, 3.0)
    check(v:norm(3), "float32", {}, f32((27 + 64 + 1728) ^ (1 / 3)), 1e-6, 0)
    -- PyTorch: tensor([1., 2.]).norm(0.5) == 5.8284 = (1 + sqrt 2)^2
    check(torch.tensor({1.0, 2.0}):norm(0.5), "float32", {}, f32((1 + math.sqrt(2)) ^ 2), 1e-6, 0)
  end)
  it("of a non-contiguous view", function()
    local m = torch.tensor({{3.0, 1.0}, {4.0, 1.0}})
    check(m[{{}, 1}]:norm(), "float32", {}, 5.0)
  end)
  it("of an integer tensor is refused; an unknown norm name too", function()
    H.errors(function() return torch.tensor({1, 2}):norm() end, "floating point")
    H.errors(function() return v:norm("nuc2") end, "unknown norm")
  end)
end)

describe("all and any", function()
  it("all() is true only when every element is non-zero", function()
    check(torch.tensor({1, 2, 3}):all(), "bool", {}, true)
    check(torch.tensor({1, 0, 3}):all(), "bool", {}, false)
    check(torch.tensor({true, false}):all(), "bool", {}, false)
    check(torch.tensor({0.5, -1.0}):all(), "bool", {}, true)
  end)
  it("any() is true when some element is non-zero", function()
    check(torch.tensor({0, 0, 3}):any(), "bool", {}, true)
    check(torch.tensor({0, 0}):any(), "bool", {}, false)
    check(torch.tensor({0.0, 0 / 0}):any(), "bool", {}, true)
    check(torch.tensor({false, false}):any(), "bool", {}, false)
  end)
  it("all() of an empty tensor is true, any() false", function()
    check(torch.zeros(0):all(), "bool", {}, true)
    check(torch.zeros(0):any(), "bool", {}, false)
  end)
  it("all and any on comparison results of a view", function()
    local x = torch.arange(12):view(3, 4)
    check(x[{{}, 2}]:gt(0):any(), "bool", {}, true)
    check(x:ge(0):all(), "bool", {}, true)
    check(x:gt(0):all(), "bool", {}, false)
  end)
end)

describe("softmax and log_softmax", function()
  local S = {{1.0, 2.0, 3.0}, {-1.0, 0.0, 4.0}}
  local function ref_softmax(rows)
    local out = {}
    for i, r in ipairs(rows) do
      local mx = -math.huge
      for _, v in ipairs(r) do mx = math.max(mx, v) end
      local s = 0.0
      for _, v in ipairs(r) do s = s + math.exp(v - mx) end
      out[i] = {}
      for j, v in ipairs(r) do out[i][j] = math.exp(v - mx) / s end
    end
    return out
  end
  it("softmax along each dim matches exp(x - max) / sum", function()
    local x = torch.tensor(S, {dtype = torch.float64})
    check(x:softmax(2), "float64", {2, 3}, ref_softmax(S), 1e-14, 1e-16)
    check(x:softmax(-1), "float64", {2, 3}, ref_softmax(S), 1e-14, 1e-16)
    check(x:softmax(1), "float64", {2, 3}, H.ref_t(ref_softmax(H.ref_t(S))), 1e-14, 1e-16)
    check(torch.softmax(torch.tensor(S), 2), "float32", {2, 3}, ref_softmax(S), 1e-6, 1e-8)
  end)
  it("log_softmax matches x - max - log(sum exp(x - max))", function()
    local x = torch.tensor(S, {dtype = torch.float64})
    local want = H.map(ref_softmax(S), math.log)
    check(x:log_softmax(2), "float64", {2, 3}, want, 1e-14, 1e-15)
    check(torch.log_softmax(torch.tensor(S), 2), "float32", {2, 3}, want, 1e-6, 1e-7)
  end)
  it("softmax is stable for large inputs and gives 0 for -inf", function()
    check(torch.tensor({1000.0, 1000.0, -math.huge}):softmax(1), "float32", {3}, {0.5, 0.5, 0.0})
    check(torch.tensor({-1000.0, 0.0}):softmax(1), "float32", {2}, {0.0, 1.0})
  end)
  it("log_softmax is stable for large inputs", function()
    check(torch.tensor({1000.0, 0.0}):log_softmax(1), "float32", {2}, {0.0, -1000.0})
  end)
  it("softmax of float64 and of a non-contiguous input", function()
    local x = torch.tensor(S, {dtype = torch.float64}):t() -- [3, 2]
    check(x:softmax(1), "float64", {3, 2}, H.ref_t(ref_softmax(S)), 1e-14, 1e-16)
  end)
  it("softmax rows of a large random matrix sum to 1", function()
    torch.manual_seed(1)
    local x = torch.randn(300, 257) * 5
    local s = x:softmax(2):sum(2)
    H.assert_close(s:tolist(), H.map(H.range(300), function() return 1.0 end), 1e-5, 0)
    local lsm = x:log_softmax(2):exp():sum(2)
    H.assert_close(lsm:tolist(), H.map(H.range(300), function() return 1.0 end), 1e-5, 0)
  end)
  it("softmax keeps float16 / bfloat16", function()
    local h = torch.tensor({0.0, 0.0}, {dtype = torch.float16}):softmax(1)
    check(h, "float16", {2}, {0.5, 0.5})
    check(torch.tensor({0.0, 0.0}, {dtype = torch.bfloat16}):log_softmax(1), "bfloat16", {2}, {-0.69140625, -0.69140625})
  end)
  it("softmax needs a dim and a floating point tensor", function()
    H.errors(function() return torch.tensor(S):softmax() end, "dimension")
    H.errors(function() return torch.tensor({1, 2}):softmax(1) end, "floating point")
    H.errors(function() return torch.tensor(S):softmax(3) end, "Dimension out of range")
  end)
end)

describe("equal and allclose", function()
  it("equal compares shape and values", function()
    local x = X()
    assert.is_true(x:equal(x:clone()))
    assert.is_true(torch.equal(x, x:t():t()))
    assert.is_false(x:equal(x:t()))
    assert.is_false(x:equal(x:view(4, 3)))
    assert.is_false(x:equal(x + 1e-12))
    assert.is_true(torch.zeros(0):equal(torch.zeros(0)))
  end)
  it("equal compares values across dtypes, NaN is never equal (PyTorch)", function()
    assert.is_true(torch.tensor({1}):equal(torch.tensor({1.0})))
    assert.is_false(torch.tensor({0 / 0}):equal(torch.tensor({0 / 0})))
  end)
  it("allclose uses |a - b| <= atol + rtol * |b| (defaults 1e-5, 1e-8)", function()
    local a = torch.tensor({1.0, 100.0}, {dtype = torch.float64})
    assert.is_true(a:allclose(a + 1e-9))
    assert.is_true(a:allclose(torch.tensor({1.0 + 5e-6, 100.0 + 5e-4}, {dtype = torch.float64})))
    assert.is_false(a:allclose(torch.tensor({1.0 + 2e-5, 100.0}, {dtype = torch.float64})))
    assert.is_true(a:allclose(a + 0.5, 0, 0.6))
    assert.is_true(a:allclose(a + 0.5, {atol = 0.6}))
    assert.is_false(a:allclose(a + 0.5, {atol = 0.4}))
    assert.is_true(a:allclose(a * 1.01, {rtol = 0.02}))
  end)
  it("allclose: inf equals inf, NaN is never close", function()
    assert.is_true(torch.tensor({math.huge}):allclose(torch.tensor({math.huge})))
    assert.is_false(torch.tensor({math.huge}):allclose(torch.tensor({-math.huge})))
    assert.is_false(torch.tensor({0 / 0}):allclose(torch.tensor({0 / 0})))
  end)
  it("allclose broadcasts and works on integer tensors", function()
    assert.is_true(torch.tensor({{1.0, 1.0}}):allclose(torch.tensor({1.0})))
    assert.is_true(torch.tensor({1, 2}):allclose(torch.tensor({1, 2})))
  end)
end)

describe("float32 sums of many elements stay accurate", function()
  it("a million float32 0.1s sum to the correctly rounded value (PyTorch: 1 ulp off)", function()
    local s = torch.full({ 1000000 }, 0.1):sum():item()
    local exact = 1000000 * 0.100000001490116119384765625 -- float32(0.1), exactly
    assert.is_true(math.abs(s - exact) <= 0.0078125 / 2, ("got %.6f"):format(s)) -- half an ulp at 1e5
  end)

  it("random sums of odd lengths match float64 to float32 rounding", function()
    torch.manual_seed(5)
    for _, n in ipairs({ 127, 129, 1000003, 4194305 }) do
      local x = torch.randn(n) * 10 + 3
      local s32, s64 = x:sum():item(), x:double():sum():item()
      assert.is_true(math.abs(s32 - s64) <= 1.2e-7 * math.abs(s64) + 1e-6, ("n=%d: %g vs %g"):format(n, s32, s64))
    end
  end)

  -- Sums along a dim: rows (the last dim) use the whole-tensor loop, columns
  -- add 8 rows pairwise in float, then into a double per column, a tile of
  -- up to 1024 columns at a time (cpu_reduce.c). Plain float accumulation
  -- down a million rows would be thousands of ulps off.
  it("a million float32 0.1s along a dim sum to the correctly rounded value, rows and columns", function()
    local f = 0.100000001490116119384765625 -- float32(0.1), exactly
    local function near(t, n, half_ulp)
      for _, v in ipairs(t:tolist()) do
        assert.is_true(math.abs(v - n * f) <= half_ulp, ("got %.6f"):format(v))
      end
    end
    near(torch.full({ 3, 1000000 }, 0.1):sum(2), 1000000, 0.0078125 / 2)
    near(torch.full({ 1000000, 3 }, 0.1):sum(1), 1000000, 0.0078125 / 2)
    -- 1030 columns: two tiles
    near(torch.full({ 10001, 1030 }, 0.1):sum(1), 10001, 2 ^ -14 / 2)
  end)

  it("random float32 sums along each dim match float64 to float32 rounding (rows, tiles, ragged ends)", function()
    torch.manual_seed(7)
    -- {19, 2500} along dim 1: 3 tiles, 19 rows (not a multiple of 8);
    -- {5, 203, 37} along 2: 5 outer blocks; along 3: rows of 37
    for _, case in ipairs({ { { 19, 2500 }, 1 }, { { 19, 2500 }, 2 }, { { 5, 203, 37 }, 1 }, { { 5, 203, 37 }, 2 },
                            { { 5, 203, 37 }, 3 }, { { 2, 1000003 }, 2 }, { { 4099, 3 }, 1 } }) do
      local shape, d = case[1], case[2]
      local x = torch.randn(shape) * 10 + 3
      local s32, s64 = x:sum(d):double(), x:double():sum(d)
      local scale = x:double():abs():sum(d)
      local excess = ((s32 - s64):abs() - s64:abs() * 1.2e-7 - scale * 1e-7):max():item()
      assert.is_true(excess <= 0, ("shape %s dim %d: off by %g past float32 rounding"):format(table.concat(shape, "x"), d, excess))
      -- the mean is the sum over the count
      H.assert_close(x:mean(d):tolist(), (s64 / shape[d]):tolist(), 1e-6, 1e-6)
    end
  end)

  it("sums along a dim of empty tensors are zeros of the reduced shape", function()
    check(torch.zeros(3, 0, 4):sum(2), "float32", { 3, 4 }, { { 0.0, 0.0, 0.0, 0.0 }, { 0.0, 0.0, 0.0, 0.0 }, { 0.0, 0.0, 0.0, 0.0 } })
    check(torch.zeros(3, 4, 0):sum(2), "float32", { 3, 0 }, { {}, {}, {} })
    check(torch.zeros(0, 4, 5):sum(2), "float32", { 0, 5 }, {})
  end)
  -- examples (issue 21): the book's X.mean(dim=(0, 2, 3), keepdim=True)
  -- in batch norm from scratch is x:mean({1, 3, 4}, true)
  it("sum and mean over a list of dims, with and without keepdim, and their gradient", function()
    local function dims(t)
      local r = {}
      for i = 1, t:dim() do r[i] = t:size(i) end
      return r
    end
    local x = torch.arange(2 * 3 * 4 * 5, { dtype = torch.float64 }):reshape(2, 3, 4, 5)
    local v = x:tolist()
    -- reference: loops over the nested lists, channel (dim 2) by channel
    local sums = { 0, 0, 0 }
    for a = 1, 2 do for c = 1, 3 do for h = 1, 4 do for w = 1, 5 do
      sums[c] = sums[c] + v[a][c][h][w]
    end end end end
    local m = x:mean({ 1, 3, 4 }, true)
    assert.are.same({ 1, 3, 1, 1 }, dims(m))
    H.assert_close(m:reshape(-1):tolist(), { sums[1] / 40, sums[2] / 40, sums[3] / 40 }, 1e-12, 1e-12)
    local s = x:sum({ 4, 1, 3 })  -- any order; dims dropped without keepdim
    assert.are.same({ 3 }, dims(s))
    H.assert_close(s:tolist(), sums, 1e-12, 1e-12)
    assert.are.same({ 2, 4 }, dims(x:sum({ -1, 2 })))
    -- the list form is the same as one dim at a time
    assert.is_true(x:mean({ 2 }, true):equal(x:mean(2, true)))
    -- gradient: each element counts 1/40 in its channel's mean
    local g = x:clone():requires_grad_()
    g:mean({ 1, 3, 4 }):sum():backward()
    H.assert_close(g.grad:reshape(-1):tolist()[1], 1 / 40, 1e-15, 1e-15)
    assert.is_true(g.grad:eq(1 / 40):all():item())
    -- mistakes are named rather than reducing over everything
    assert.error_matches(function() x:mean({ 1, 1 }) end, "dim 1 appears more than once")
    assert.error_matches(function() x:prod({ 1, 2 }) end, "list of dims is supported by sum and mean only")
    assert.error_matches(function() x:var({ 1, 2 }) end, "list of dims is supported by sum and mean only")
    assert.error_matches(function() x:mean({ 1, 5 }) end, "Dimension out of range")
  end)
end)
