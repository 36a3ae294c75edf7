-- gemm_split_spec.lua: matrix products split over a worker set
-- (src/backend/cpu/cpu_gemm.c). OpenBLAS runs single-threaded; a product of more than
-- about 2^20 multiply-adds is cut into row or column blocks (a batch into
-- matrices), one BLAS call per block on the set's threads.
-- torch._with_workers(n, fn) (test-only) runs fn with a set of n threads
-- bound, so every split is reached whatever cores the host has. Each
-- reference is a float64 sum in plain Lua, computed once and compared with
-- the product on sets of 1, 2 and 3 threads.
local torch = require("torch")
local H = require("helpers")

local RTOL = {float32 = 2e-6, float64 = 1e-14}
local SETS = {1, 2, 3}
local abs = math.abs -- a local: globals are slow inside busted's sandbox
local function tensor(data, dtn) return torch.tensor(data, {dtype = torch[dtn]}) end

-- The reference of a @ b (nested lists) with each element's error scale
-- sum_k |a_ik b_kj|.
local function reference(a, b)
  local m, k, n = #a, #b, #b[1]
  local ref, mag = {}, {}
  for i = 1, m do
    ref[i], mag[i] = {}, {}
    for j = 1, n do
      local s, g = 0.0, 0.0
      for p = 1, k do local v = a[i][p] * b[p][j]; s = s + v; g = g + abs(v) end
      ref[i][j], mag[i][j] = s, g
    end
  end
  return {ref = ref, mag = mag}
end

local function assert_close(got, r, rtol, what)
  assert.are.equal(#r.ref, #got, what)
  for i = 1, #r.ref do
    assert.are.equal(#r.ref[i], #got[i], what)
    for j = 1, #r.ref[i] do
      local err = abs(got[i][j] - r.ref[i][j])
      if not (err <= rtol * r.mag[i][j] + 1e-300) then -- NaN fails too
        error(string.format("%s: element [%d][%d]: got %.17g, want %.17g (error %.3g, bound %.3g)", what, i, j,
                            got[i][j], r.ref[i][j], err, rtol * r.mag[i][j]), 2)
      end
    end
  end
end

-- Data and references are the same for both dtypes (H.data's values are
-- exact in float32): each is built once, on first use.
local memo = {}
local function once(key, build)
  if memo[key] == nil then memo[key] = build() end
  return memo[key]
end

-- fn() on each set; check(result, what) compares it. Before each call a
-- result of the same size is filled with NaN and freed, so the product
-- most likely lands on NaNs: a block left unwritten shows, instead of
-- keeping the right values of the previous set's result.
local function on_each_set(fn, check)
  for _, n in ipairs(SETS) do
    collectgarbage() -- the previous set's result goes first, the junk last
    local junk = fn()
    junk:fill_(0 / 0)
    junk = nil -- luacheck: ignore
    collectgarbage()
    check(torch._with_workers(n, fn), n .. " thread(s)")
  end
end

local function sub(A, rows, cols)
  local r = {}
  for i, ri in ipairs(rows) do
    r[i] = {}
    for j, cj in ipairs(cols) do r[i][j] = A[ri][cj] end
  end
  return r
end
local function seq(a, b, step)
  local r = {}
  for v = a, b, step or 1 do r[#r + 1] = v end
  return r
end

describe("matrix products split over a worker set", function()
  it("runs fn with the set bound, and the Lua thread has the global set of all the host's cores", function()
    for _, n in ipairs(SETS) do assert.are.equal(n, torch._with_workers(n, function() return torch._num_threads() end)) end
    assert.are.equal(torch._workers_selftest(1, 1, 1).host_cores, torch._num_threads())
  end)

  for _, dtn in ipairs({"float32", "float64"}) do
    it(dtn .. ": odd sizes split by columns, by rows, and too small to split", function()
      -- {M, K, N}: N > M splits columns, M > N rows; the last is one call
      for _, s in ipairs({{131, 61, 167}, {301, 67, 53}, {3, 400, 900}, {900, 400, 3}, {33, 20, 47}}) do
        local A, B, r = table.unpack(once(table.concat(s, "x"), function()
          local A, B = H.data({s[1], s[2]}, s[1] + 2), H.data({s[2], s[3]}, s[3] + 5)
          return {A, B, reference(A, B)}
        end))
        local a, b = tensor(A, dtn), tensor(B, dtn)
        on_each_set(function() return a:mm(b) end, function(c, what)
          assert.are.same({s[1], s[3]}, H.shape(c))
          assert_close(c:tolist(), r, RTOL[dtn], what)
        end)
      end
    end)

    it(dtn .. ": transposed operands", function()
      local A, B = H.data({61, 131}, 11), H.data({167, 61}, 12) -- A^T is 131x61, B^T 61x167
      local r = once("t1", function() return reference(H.ref_t(A), H.ref_t(B)) end)
      local a, b = tensor(A, dtn), tensor(B, dtn)
      on_each_set(function() return a:t():mm(b:t()) end, function(c, what) assert_close(c:tolist(), r, RTOL[dtn], what) end)
      local C = H.data({61, 90}, 13)
      r = once("t2", function() return reference(H.ref_t(A), C) end)
      on_each_set(function() return a:t():mm(tensor(C, dtn)) end, function(c, what) assert_close(c:tolist(), r, RTOL[dtn], what) end)
    end)

    it(dtn .. ": strided operands that BLAS cannot read directly, and an expanded one", function()
      local A, B = H.data({100, 240}, 21), H.data({140, 199}, 22)
      -- every other column of A (100 x 120, column stride 2); rows 3..122, columns 1, 3, .. 199 of B
      local a = tensor(A, dtn)[{{}, {1, 240, 2}}]
      local b = tensor(B, dtn)[{{3, 122}, {1, 199, 2}}]
      local As, Bs = sub(A, seq(1, 100), seq(1, 240, 2)), sub(B, seq(3, 122), seq(1, 199, 2))
      local r = once("s1", function() return reference(As, Bs) end)
      on_each_set(function() return a:mm(b) end, function(c, what) assert_close(c:tolist(), r, RTOL[dtn], what) end)
      r = once("s2", function() return reference(H.ref_t(Bs), H.ref_t(As)) end)
      on_each_set(function() return b:t():mm(a:t()) end, function(c, what) assert_close(c:tolist(), r, RTOL[dtn], what) end)
      local row = H.data({120}, 23)
      local Rs = {}
      for i = 1, 90 do Rs[i] = row end
      local e = tensor({row}, dtn):expand(90, 120) -- stride 0 rows
      r = once("s3", function() return reference(Rs, Bs) end)
      on_each_set(function() return e:mm(b) end, function(c, what) assert_close(c:tolist(), r, RTOL[dtn], what) end)
    end)

    it(dtn .. ": batches (more matrices than threads, fewer, transposed batches, broadcast batch dims)", function()
      for _, s in ipairs({{5, 61, 65, 70}, {2, 131, 97, 91}}) do
        local A, B = H.data({s[1], s[2], s[3]}, 31), H.data({s[1], s[3], s[4]}, 32)
        local refs, Bt = {}, {}
        for z = 1, s[1] do Bt[z] = H.ref_t(B[z]) end
        refs = once("b" .. s[1], function()
          for z = 1, s[1] do refs[z] = reference(A[z], B[z]) end
          return refs
        end)
        local a, b, bt = tensor(A, dtn), tensor(B, dtn), tensor(Bt, dtn):transpose(2, 3)
        for _, bb in ipairs({b, bt}) do
          on_each_set(function() return torch.bmm(a, bb) end, function(c, what)
            assert.are.same({s[1], s[2], s[4]}, H.shape(c))
            local got = c:tolist()
            for z = 1, s[1] do assert_close(got[z], refs[z], RTOL[dtn], what .. ", matrix " .. z) end
          end)
        end
      end
      -- [2, 1, 40, 90] @ [3, 90, 50] -> [2, 3, 40, 50]
      local P, Q = H.data({2, 1, 40, 90}, 33), H.data({3, 90, 50}, 34)
      local p, q = tensor(P, dtn), tensor(Q, dtn)
      local refs = once("bb", function()
        local t = {}
        for x = 1, 2 do t[x] = {} for y = 1, 3 do t[x][y] = reference(P[x][1], Q[y]) end end
        return t
      end)
      on_each_set(function() return p:matmul(q) end, function(c, what)
        local got = c:tolist()
        for x = 1, 2 do for y = 1, 3 do assert_close(got[x][y], refs[x][y], RTOL[dtn], what) end end
      end)
    end)
  end

  it("a product big enough to be cut into blocks for Ctrl-C, checked at the blocks' edges", function()
    local n = 1700 -- 4.9e9 multiply-adds: two blocks of rows even on one thread
    local a, b = torch.rand(n, n), torch.rand(n, n)
    local bt = b:t():contiguous()
    for _, threads in ipairs({1, 2}) do
      local c = torch._with_workers(threads, function() return a:mm(b) end)
      for _, i in ipairs({1, 15, 16, 17, 425, 848, 849, 850, 851, 1275, 1699, 1700}) do
        local ai, ci = a:select(1, i):tolist(), c:select(1, i):tolist()
        for _, j in ipairs({1, 17, 849, 850, 1700}) do
          local bj, s, mag = bt:select(1, j):tolist(), 0.0, 0.0
          for k = 1, n do s = s + ai[k] * bj[k]; mag = mag + abs(ai[k] * bj[k]) end
          assert.is_true(abs(ci[j] - s) <= 2e-6 * mag, string.format("c[%d][%d] = %.9g, want %.9g", i, j, ci[j], s))
        end
      end
    end
  end)
end)

describe("torch._with_workers", function()
  it("restores the set bound before, also when fn raises", function()
    local before = torch._num_threads()
    H.errors(function() torch._with_workers(3, function() error("inside") end) end, "inside")
    assert.are.equal(before, torch._num_threads())
    assert.are.equal(5, torch._with_workers(2, function() return 5 end))
    H.errors(function() torch._with_workers(0, function() end) end, "expected 1 to 64 threads")
  end)
end)
