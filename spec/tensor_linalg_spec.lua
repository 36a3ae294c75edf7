-- Matrix products: matmul (1-d, 2-d, batched with broadcasting), mm and
-- bmm for float32, float64 and int64, with transposed and strided
-- operands. References are float64 (or wrapping int64) products computed
-- in plain Lua loops (H.ref_mm, H.ref_mm_int).
local torch = require("torch")
local H = require("helpers")

local check = H.check

local assert_mm_close = H.assert_mm_close

local RTOL = {float32 = 2e-6, float64 = 1e-14}
local function tensor(data, dtn) return torch.tensor(data, {dtype = torch[dtn]}) end

-- the batch b of a 3-d nested list
local function batch(t, b) return t[b] end

describe("mm and 2-d matmul", function()
  it("a hand-worked 2 x 3 times 3 x 2", function()
    local a = torch.tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}})
    local b = torch.tensor({{7.0, 8.0}, {9.0, 10.0}, {11.0, 12.0}})
    -- [1*7+2*9+3*11, 1*8+2*10+3*12; 4*7+5*9+6*11, 4*8+5*10+6*12]
    check(a:mm(b), "float32", {2, 2}, {{58.0, 64.0}, {139.0, 154.0}})
    check(a:matmul(b), "float32", {2, 2}, {{58.0, 64.0}, {139.0, 154.0}})
    check(torch.mm(a, b), "float32", {2, 2}, {{58.0, 64.0}, {139.0, 154.0}})
    check(torch.matmul(a, b), "float32", {2, 2}, {{58.0, 64.0}, {139.0, 154.0}})
  end)
  for _, dtn in ipairs({"float32", "float64"}) do
    it(dtn .. " products of several shapes match the float64 reference", function()
      for _, s in ipairs({{1, 1, 1}, {3, 5, 4}, {7, 1, 9}, {16, 33, 8}, {64, 70, 65}}) do
        local A, B = H.data({s[1], s[2]}, s[1] * 7 + 1), H.data({s[2], s[3]}, s[3] * 11 + 3)
        local c = tensor(A, dtn):mm(tensor(B, dtn))
        assert.are.equal(dtn, H.dtype(c))
        assert.are.same({s[1], s[3]}, H.shape(c))
        assert_mm_close(c:tolist(), A, B, RTOL[dtn])
      end
    end)
    it(dtn .. " with transposed operands (each and both)", function()
      local A, B = H.data({6, 5}, 21), H.data({6, 4}, 22) -- A^T is 5x6, B is 6x4
      local At = H.ref_t(A)
      local a, b = tensor(A, dtn), tensor(B, dtn)
      assert_mm_close(a:t():mm(b):tolist(), At, B, RTOL[dtn])
      local C = H.data({4, 5}, 23) -- (C^T) 5x4 ; A (6x5) @ C^T (5x4)
      assert_mm_close(a:mm(tensor(C, dtn):t()):tolist(), A, H.ref_t(C), RTOL[dtn])
      -- (B^T) 4x6 @ (A^T)^T ... both transposed: B^T (4x6) @ C^T? use A^T^T
      local D = H.data({5, 4}, 24) -- D^T is 4x5; B^T (4x6) @ A (6x5) both from transposed storage
      local bt = tensor(H.ref_t(B), dtn):t():t() -- contiguous B^T
      assert_mm_close(bt:mm(a):tolist(), H.ref_t(B), A, RTOL[dtn])
      assert_mm_close(tensor(D, dtn):t():mm(a:t()):tolist(), H.ref_t(D), At, RTOL[dtn])
    end)
    it(dtn .. " with strided operands that BLAS cannot read directly", function()
      local A, B = H.data({5, 12}, 31), H.data({8, 6}, 32)
      -- every other column of A (5 x 6, column stride 2) and rows 2..7 of B's columns 1..3
      local a = tensor(A, dtn)[{{}, {1, 12, 2}}]
      local b = tensor(B, dtn)[{{2, 7}, {1, 3}}]
      local As, Bs = {}, {}
      for i = 1, 5 do As[i] = {} for j = 1, 6 do As[i][j] = A[i][2 * j - 1] end end
      for i = 1, 6 do Bs[i] = {} for j = 1, 3 do Bs[i][j] = B[i + 1][j] end end
      assert_mm_close(a:mm(b):tolist(), As, Bs, RTOL[dtn])
      -- an expanded (stride 0) operand
      local r = tensor({H.data({6}, 33)}, dtn):expand(4, 6)
      local Rs = {}
      for i = 1, 4 do Rs[i] = H.data({6}, 33) end
      assert_mm_close(r:mm(b):tolist(), Rs, Bs, RTOL[dtn])
    end)
  end
  it("int64 products are exact", function()
    local A, B = H.idata({4, 6}, 1, -50, 50), H.idata({6, 3}, 2, -50, 50)
    check(torch.tensor(A):mm(torch.tensor(B)), "int64", {4, 3}, H.ref_mm_int(A, B))
    check(torch.tensor(A):t():t():matmul(torch.tensor(B)), "int64", {4, 3}, H.ref_mm_int(A, B))
    local At = H.ref_t(A)
    check(torch.tensor(At):t():mm(torch.tensor(B)), "int64", {4, 3}, H.ref_mm_int(A, B))
    check(torch.tensor(A):mm(torch.tensor(H.ref_t(B)):t()), "int64", {4, 3}, H.ref_mm_int(A, B))
  end)
  it("int64 products wrap around like int64 arithmetic", function()
    local A, B = {{1 << 62, 3}}, {{4}, {math.maxinteger}}
    check(torch.tensor(A):mm(torch.tensor(B)), "int64", {1, 1}, H.ref_mm_int(A, B))
  end)
  it("int32 and int16 products keep their dtype", function()
    check(torch.tensor({{1, 2}}, {dtype = torch.int32}):mm(torch.tensor({{3}, {4}}, {dtype = torch.int32})), "int32", {1, 1}, {{11}})
    check(torch.tensor({{100, 100}}, {dtype = torch.int16}):mm(torch.tensor({{200}, {200}}, {dtype = torch.int16})),
          "int16", {1, 1}, {{(40000 + 32768) % 65536 - 32768}})
  end)
  it("bfloat16 products are computed in float32 and rounded", function()
    local a = torch.tensor({{1.0, 2.0}, {3.0, 4.0}}, {dtype = torch.bfloat16})
    check(a:mm(a), "bfloat16", {2, 2}, {{7.0, 10.0}, {15.0, 22.0}})
  end)
  it("the result is a new contiguous tensor", function()
    local a = torch.ones(2, 2)
    local c = a:mm(a)
    assert.is_true(c:is_contiguous())
    c:fill_(0)
    H.assert_list_equal(a:tolist(), {{1.0, 1.0}, {1.0, 1.0}})
  end)
  it("empty dims: K = 0 gives zeros, M = 0 or N = 0 empty results", function()
    check(torch.ones(2, 0):mm(torch.ones(0, 3)), "float32", {2, 3}, {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}})
    check(torch.ones(2, 0, {dtype = torch.int64}):mm(torch.ones(0, 1, {dtype = torch.int64})), "int64", {2, 1}, {{0}, {0}})
    assert.are.same({0, 3}, H.shape(torch.ones(0, 2):mm(torch.ones(2, 3))))
    assert.are.same({2, 0}, H.shape(torch.ones(2, 2):mm(torch.ones(2, 0))))
  end)
  it("a large float64 product (OpenBLAS threads) matches the reference", function()
    local A, B = H.data({120, 150}, 41), H.data({150, 90}, 42)
    assert_mm_close(tensor(A, "float64"):mm(tensor(B, "float64")):tolist(), A, B, 1e-14)
    assert_mm_close(tensor(A, "float32"):mm(tensor(B, "float32")):tolist(), A, B, 3e-6)
  end)
end)

describe("matmul with 1-d operands", function()
  for _, dtn in ipairs({"float32", "float64", "int64"}) do
    local gen = dtn == "int64" and function(s, seed) return H.idata(s, seed) end or H.data
    it(dtn .. ": vector . vector is a 0-d dot product", function()
      local u, v = gen({7}, 1), gen({7}, 2)
      local want = 0
      for i = 1, 7 do want = want + u[i] * v[i] end
      local r = tensor(u, dtn):matmul(tensor(v, dtn))
      assert.are.same({}, H.shape(r))
      assert.are.equal(dtn, H.dtype(r))
      if dtn == "int64" then assert.are.equal(want, r:item())
      else H.assert_close({r:item()}, {want}, RTOL[dtn], 1e-12) end
    end)
    it(dtn .. ": matrix @ vector is [M], vector @ matrix is [N]", function()
      local A, v, w = gen({4, 5}, 3), gen({5}, 4), gen({4}, 5)
      local mv = tensor(A, dtn):matmul(tensor(v, dtn))
      local vm = tensor(w, dtn):matmul(tensor(A, dtn))
      assert.are.same({4}, H.shape(mv))
      assert.are.same({5}, H.shape(vm))
      local col = {}
      for i = 1, 5 do col[i] = {v[i]} end
      local want_mv = H.map(H.ref_mm(A, col), function(x) return x end)
      local want_vm = H.ref_mm({w}, A)[1]
      local got_mv = {}
      for i, x in ipairs(mv:tolist()) do got_mv[i] = {x} end
      if dtn == "int64" then
        H.assert_list_equal(got_mv, H.ref_mm_int(A, col))
        H.assert_list_equal(vm:tolist(), H.ref_mm_int({w}, A)[1])
      else
        assert_mm_close(got_mv, A, col, RTOL[dtn])
        assert_mm_close({vm:tolist()}, {w}, A, RTOL[dtn])
        H.assert_close(got_mv, want_mv, 1e-5, 1e-6)
        H.assert_close(vm:tolist(), want_vm, 1e-5, 1e-6)
      end
    end)
    it(dtn .. ": a transposed matrix @ vector", function()
      local A, v = gen({5, 4}, 6), gen({5}, 7)
      local r = tensor(A, dtn):t():matmul(tensor(v, dtn))
      local col = {}
      for i = 1, 5 do col[i] = {v[i]} end
      local got = {}
      for i, x in ipairs(r:tolist()) do got[i] = {x} end
      if dtn == "int64" then H.assert_list_equal(got, H.ref_mm_int(H.ref_t(A), col))
      else assert_mm_close(got, H.ref_t(A), col, RTOL[dtn]) end
    end)
  end
end)

describe("batched matmul and bmm", function()
  for _, dtn in ipairs({"float32", "float64", "int64"}) do
    local gen = dtn == "int64" and function(s, seed) return H.idata(s, seed) end or H.data
    local function same(got, a, b)
      if dtn == "int64" then H.assert_list_equal(got, H.ref_mm_int(a, b))
      else assert_mm_close(got, a, b, RTOL[dtn]) end
    end
    it(dtn .. ": bmm multiplies batch by batch", function()
      local A, B = gen({3, 4, 5}, 11), gen({3, 5, 2}, 12)
      local c = tensor(A, dtn):bmm(tensor(B, dtn))
      assert.are.same({3, 4, 2}, H.shape(c))
      local got = c:tolist()
      for z = 1, 3 do same(got[z], batch(A, z), batch(B, z)) end
      local c2 = torch.bmm(tensor(A, dtn), tensor(B, dtn)):tolist()
      for z = 1, 3 do same(c2[z], batch(A, z), batch(B, z)) end
    end)
    it(dtn .. ": bmm with transposed batches", function()
      local A, B = gen({2, 5, 4}, 13), gen({2, 3, 5}, 14) -- use A^T per batch (4x5) and B^T (5x3)
      local c = tensor(A, dtn):transpose(2, 3):bmm(tensor(B, dtn):transpose(2, 3)):tolist()
      for z = 1, 2 do same(c[z], H.ref_t(A[z]), H.ref_t(B[z])) end
      -- a permuted batch dim: batch-major storage read as [B, M, K] from [M, B, K]
      local P = gen({4, 2, 5}, 15)
      local pa = tensor(P, dtn):permute(2, 1, 3) -- [2, 4, 5]
      local Bm = gen({2, 5, 3}, 16)
      local r = pa:bmm(tensor(Bm, dtn)):tolist()
      for z = 1, 2 do
        local Az = {}
        for i = 1, 4 do Az[i] = P[i][z] end
        same(r[z], Az, Bm[z])
      end
    end)
    it(dtn .. ": matmul broadcasts a matrix over a batch (3-d @ 2-d and 2-d @ 3-d)", function()
      local A, W = gen({3, 4, 5}, 17), gen({5, 2}, 18)
      local r = tensor(A, dtn):matmul(tensor(W, dtn))
      assert.are.same({3, 4, 2}, H.shape(r))
      local got = r:tolist()
      for z = 1, 3 do same(got[z], A[z], W) end
      local M, Bt = gen({2, 5}, 19), gen({3, 5, 4}, 20)
      local r2 = tensor(M, dtn):matmul(tensor(Bt, dtn))
      assert.are.same({3, 2, 4}, H.shape(r2))
      local got2 = r2:tolist()
      for z = 1, 3 do same(got2[z], M, Bt[z]) end
    end)
    it(dtn .. ": matmul broadcasts batch dims ([2,1,M,K] @ [3,K,N] -> [2,3,M,N])", function()
      local A, B = gen({2, 1, 3, 4}, 21), gen({3, 4, 2}, 22)
      local r = tensor(A, dtn):matmul(tensor(B, dtn))
      assert.are.same({2, 3, 3, 2}, H.shape(r))
      local got = r:tolist()
      for i = 1, 2 do for j = 1, 3 do same(got[i][j], A[i][1], B[j]) end end
    end)
    it(dtn .. ": batched matmul with 1-d operands drops their dim", function()
      local A, v = gen({3, 4, 5}, 23), gen({5}, 24)
      local r = tensor(A, dtn):matmul(tensor(v, dtn))
      assert.are.same({3, 4}, H.shape(r))
      local col = {}
      for i = 1, 5 do col[i] = {v[i]} end
      local got = r:tolist()
      for z = 1, 3 do
        local g = {}
        for i = 1, 4 do g[i] = {got[z][i]} end
        same(g, A[z], col)
      end
      local w = gen({4}, 25)
      local r2 = tensor(w, dtn):matmul(tensor(A, dtn))
      assert.are.same({3, 5}, H.shape(r2))
      local got2 = r2:tolist()
      for z = 1, 3 do same({got2[z]}, {w}, A[z]) end
    end)
  end
  it("a batch of empty matrices", function()
    assert.are.same({0, 2, 3}, H.shape(torch.ones(0, 2, 4):bmm(torch.ones(0, 4, 3))))
    check(torch.ones(2, 1, 0):bmm(torch.ones(2, 0, 1)), "float32", {2, 1, 1}, {{{0.0}}, {{0.0}}})
  end)
end)

describe("matrix product errors", function()
  it("mismatched inner sizes name both shapes", function()
    H.errors(function() return torch.ones(2, 3):mm(torch.ones(2, 3)) end, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)")
    H.errors(function() return torch.ones(2, 3):matmul(torch.ones(4, 5)) end, "(2x3 and 4x5)")
    H.errors(function() return torch.ones(3):matmul(torch.ones(2)) end, {"[3]", "[2]"})
    H.errors(function() return torch.ones(2, 3, 4):matmul(torch.ones(3, 5, 6)) end, "cannot be multiplied")
  end)
  it("mm and bmm check their ranks", function()
    H.errors(function() return torch.ones(2, 2):mm(torch.ones(2)) end, "mat2 must be a matrix")
    H.errors(function() return torch.ones(2):mm(torch.ones(2, 2)) end, "self must be a matrix")
    H.errors(function() return torch.ones(2, 2):bmm(torch.ones(2, 2)) end, "batch1 must be a 3D tensor")
    H.errors(function() return torch.ones(1, 2, 2):bmm(torch.ones(2, 2)) end, "batch2 must be a 3D tensor")
  end)
  it("bmm checks batch counts and inner sizes", function()
    H.errors(function() return torch.ones(2, 2, 2):bmm(torch.ones(3, 2, 2)) end, "same number of batches, got 2 and 3")
    H.errors(function() return torch.ones(2, 2, 3):bmm(torch.ones(2, 2, 2)) end, "[2, 3] but got: [2, 2]")
  end)
  it("batch dims that cannot broadcast are an error", function()
    H.errors(function() return torch.ones(2, 3, 4):matmul(torch.ones(5, 4, 2)) end, "must match")
  end)
  it("0-d operands, mixed dtypes and bool are refused", function()
    H.errors(function() return torch.tensor(2.0):matmul(torch.ones(2)) end, "at least 1D")
    H.errors(function() return torch.ones(2, 2):mm(torch.ones(2, 2, {dtype = torch.float64})) end,
             {"same dtype", "float32", "float64"})
    H.errors(function() return torch.ones(2, 2, {dtype = torch.bool}):mm(torch.ones(2, 2, {dtype = torch.bool})) end, "bool")
  end)
  it("a failed product leaves its operands unchanged", function()
    local a, b = torch.ones(2, 3), torch.ones(2, 3)
    local sa, sb = H.snapshot(a), H.snapshot(b)
    H.errors(function() return a:mm(b) end, "cannot be multiplied")
    H.assert_unchanged(a, sa)
    H.assert_unchanged(b, sb)
  end)
end)
