-- gemm_split_spec.lua: matrix products split over a worker set
-- (src/cpu_gemm.c). OpenBLAS runs single-threaded; each product is cut
-- into row or column blocks (and batches into matrices), one BLAS call per
-- block on the set's threads. torch._with_workers(n, fn) (test-only) runs
-- fn with a set of n threads bound, so every split is reached whatever
-- cores the host has. References are float64 sums in plain Lua.
local torch = require("torch")
local H = require("helpers")

local RTOL = {float32 = 2e-6, float64 = 1e-14}
local function tensor(data, dtn) return torch.tensor(data, {dtype = torch[dtn]}) end

-- Rows i of A and columns j of B for a strided or transposed view.
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

for _, threads in ipairs({1, 2, 3}) do
  describe("matrix products on a set of " .. threads .. " thread(s)", function()
    local function on_set(fn) return torch._with_workers(threads, fn) end

    it("runs with the set bound", function()
      assert.are.equal(threads, on_set(function() return torch._num_threads() end))
      assert.are.equal(torch._workers_selftest(1, 1, 1).host_cores, torch._num_threads())
    end)

    for _, dtn in ipairs({"float32", "float64"}) do
      it(dtn .. ": odd sizes split by rows, by columns, and too small to split", function()
        -- {M, K, N}: N > M splits columns, M > N rows; the last is one call
        for _, s in ipairs({{67, 45, 131}, {301, 97, 29}, {1, 300, 1000}, {1000, 300, 1}, {33, 200, 47}, {5, 7, 3}}) do
          local A, B = H.data({s[1], s[2]}, s[1] + 2), H.data({s[2], s[3]}, s[3] + 5)
          local c = on_set(function() return tensor(A, dtn):mm(tensor(B, dtn)) end)
          assert.are.same({s[1], s[3]}, H.shape(c))
          H.assert_mm_close(c:tolist(), A, B, RTOL[dtn])
        end
      end)

      it(dtn .. ": transposed operands", function()
        local A, B = H.data({45, 131}, 11), H.data({97, 45}, 12) -- A^T is 131x45, B^T 45x97
        local At, Bt = H.ref_t(A), H.ref_t(B)
        local a, b = tensor(A, dtn), tensor(B, dtn)
        H.assert_mm_close(on_set(function() return a:t():mm(b:t()) end):tolist(), At, Bt, RTOL[dtn])
        local C = H.data({45, 150}, 13)
        H.assert_mm_close(on_set(function() return a:t():mm(tensor(C, dtn)) end):tolist(), At, C, RTOL[dtn])
        H.assert_mm_close(on_set(function() return tensor(C, dtn):t():mm(a) end):tolist(), H.ref_t(C), A, RTOL[dtn])
      end)

      it(dtn .. ": strided operands that BLAS cannot read directly, and an expanded one", function()
        local A, B = H.data({90, 160}, 21), H.data({140, 99}, 22)
        -- every other column of A (90 x 80, column stride 2); rows 3..82, columns 1, 3, .. 99 of B
        local a = tensor(A, dtn)[{{}, {1, 160, 2}}]
        local b = tensor(B, dtn)[{{3, 82}, {1, 99, 2}}]
        local As, Bs = sub(A, seq(1, 90), seq(1, 160, 2)), sub(B, seq(3, 82), seq(1, 99, 2))
        H.assert_mm_close(on_set(function() return a:mm(b) end):tolist(), As, Bs, RTOL[dtn])
        H.assert_mm_close(on_set(function() return b:t():mm(a:t()) end):tolist(), H.ref_t(Bs), H.ref_t(As), RTOL[dtn])
        local row = H.data({80}, 23)
        local r = tensor({row}, dtn):expand(70, 80) -- stride 0 rows
        local Rs = {}
        for i = 1, 70 do Rs[i] = row end
        H.assert_mm_close(on_set(function() return r:mm(b) end):tolist(), Rs, Bs, RTOL[dtn])
      end)

      it(dtn .. ": batches (bmm, transposed batches, broadcast batch dims)", function()
        local A, B = H.data({3, 67, 45}, 31), H.data({3, 45, 70}, 32)
        local c = on_set(function() return torch.bmm(tensor(A, dtn), tensor(B, dtn)) end)
        assert.are.same({3, 67, 70}, H.shape(c))
        local got = c:tolist()
        for z = 1, 3 do H.assert_mm_close(got[z], A[z], B[z], RTOL[dtn]) end
        -- each batch's B stored transposed: [3, 70, 45] viewed as [3, 45, 70]
        local Bt = {}
        for z = 1, 3 do Bt[z] = H.ref_t(B[z]) end
        got = on_set(function() return torch.bmm(tensor(A, dtn), tensor(Bt, dtn):transpose(2, 3)) end):tolist()
        for z = 1, 3 do H.assert_mm_close(got[z], A[z], B[z], RTOL[dtn]) end
        -- [2, 1, 40, 50] @ [3, 50, 60] -> [2, 3, 40, 60]
        local P, Q = H.data({2, 1, 40, 50}, 33), H.data({3, 50, 60}, 34)
        got = on_set(function() return tensor(P, dtn):matmul(tensor(Q, dtn)) end):tolist()
        for x = 1, 2 do
          for y = 1, 3 do H.assert_mm_close(got[x][y], P[x][1], Q[y], RTOL[dtn]) end
        end
      end)
    end

    if threads <= 2 then
      it("a product big enough to be cut into blocks for Ctrl-C, checked at the blocks' edges", function()
        local n = 1300 -- 2.2e9 multiply-adds: more than one block even on one thread
        local a, b = torch.rand(n, n), torch.rand(n, n)
        local c = on_set(function() return a:mm(b) end)
        local bt = b:t():contiguous()
        for _, i in ipairs({1, 15, 16, 17, 325, 650, 651, 975, 1299, 1300}) do
          local ai, ci = a:select(1, i):tolist(), c:select(1, i):tolist()
          for _, j in ipairs({1, 17, 649, 650, 1300}) do
            local bj, s, mag = bt:select(1, j):tolist(), 0.0, 0.0
            for k = 1, n do s = s + ai[k] * bj[k]; mag = mag + math.abs(ai[k] * bj[k]) end
            assert.is_true(math.abs(ci[j] - s) <= 2e-6 * mag, string.format("c[%d][%d] = %.9g, want %.9g", i, j, ci[j], s))
          end
        end
      end)
    end
  end)
end

describe("torch._with_workers", function()
  it("restores the set bound before, also when fn raises", function()
    local before = torch._num_threads()
    H.errors(function() torch._with_workers(3, function() error("inside") end) end, "inside")
    assert.are.equal(before, torch._num_threads())
    assert.are.equal(5, torch._with_workers(2, function() return 5 end))
    H.errors(function() torch._with_workers(0, function() end) end, "expected 1 to 64 threads")
  end)
end)
