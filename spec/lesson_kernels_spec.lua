-- `gshell --lesson kernels` (issue 30): writing kernels with the kernel
-- lab, from a map to a tiled matrix product, driven end to end with typed
-- kernels (right ones and the usual slips, each with its hint: a missing
-- guard, a missing barrier, 1-based habits, too few blocks, an atomic
-- that accumulated twice, a count target missed), and resumed at every
-- step in a new session (each step's setup makes its tensors).
local R = require("gshell_run")
local H = require("helpers")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end
local function count(s, piece)
  local n, i = 0, 1
  while true do
    local a = s:find(piece, i, true)
    if not a then return n end
    n, i = n + 1, a + 1
  end
end

-- The kernels lesson from step `at` with these cells typed (a cell may
-- span lines: the prompt reads on until the chunk is complete).
local function kernels_from(at, cells)
  local dir = R.tmpdir()
  R.write_file(dir .. "/state", "kernels\t" .. at .. "\n")
  local out, err, code = R.run({ "--lesson", "kernels", "--repl-stdin" }, table.concat(cells, "\n") .. "\n",
    { GSHELL_LESSON_STATE = dir .. "/state" })
  local state = R.read_file(dir .. "/state")
  os.execute("rm -rf " .. R.quote(dir))
  return out, err, code, state
end

-- a kernel of one thread per element: `body` uses i (and n)
local function map1d(name, params, body)
  return string.format("%s = torch.cuda.kernel(function(%s)\n  local i = blockIdx.x * blockDim.x + threadIdx.x\n" ..
    "  %s\nend)", name, params, body)
end

local REDUCE = [[
  local h = blockDim.x // 2
  while h > 0 do
    if t < h then s[t] = s[t] + s[t + h] end
    syncthreads()
    h = h // 2
  end]]

local DOT = [[
dot = torch.cuda.kernel(function(out, a, b, n)
  local s = shared(128)
  local t = threadIdx.x
  local i = blockIdx.x * blockDim.x + t
  s[t] = i < n and a[i] * b[i] or 0
  syncthreads()
]] .. REDUCE .. [[

  if t == 0 then atomic_add(out, 0, s[0]) end
end)]]

local function tiled(second_barrier)
  return [[
tiled = torch.cuda.kernel(function(c, a, b, n)
  local ta, tb = shared(16 * 16), shared(16 * 16)
  local tx, ty = threadIdx.x, threadIdx.y
  local row, col = blockIdx.y * 16 + ty, blockIdx.x * 16 + tx
  local acc = 0
  for t = 0, n // 16 - 1 do
    ta[ty * 16 + tx] = a[row * n + t * 16 + tx]
    tb[ty * 16 + tx] = b[(t * 16 + ty) * n + col]
    syncthreads()
    for k = 0, 15 do acc = acc + ta[ty * 16 + k] * tb[k * 16 + tx] end
    ]] .. (second_barrier and "syncthreads()" or "") .. [[

  end
  c[row * n + col] = acc
end)]]
end
local TILED_LAUNCH = "rt = tiled:launch({2, 2}, {16, 16}, C, A, B, n)"

local lesson_it = H.not_under_tsan_it(it, pending,
  "the lesson's own Lua in a dozen child sessions; the full run covers the engine")

describe("gshell --lesson kernels", function()
  it("is listed with the other lessons", function()
    local out = R.run({ "--lesson" }, "", { GSHELL_LESSON_STATE = "/nonexistent/state" })
    assert.truthy(out:find("kernels%s+Writing GPU kernels.-%(13 steps, not started%)"), out)
    assert.truthy(out:find("lenet%s+LeNet"), out)
  end)

  it("runs from map to the tiled product, checking values and counts, with a hint for each usual slip", function()
    local out, err, code, state = kernels_from(1, {
      -- 1 map: a 1-based habit, then right, with the picture
      "map = torch.cuda.kernel(function(out, a)\n  local i = threadIdx.x + 1\n  out[i] = a[i] + 10\nend)",
      "r = map:launch(1, 8, out, a)",
      "map = torch.cuda.kernel(function(out, a)\n  local i = threadIdx.x\n  out[i] = a[i] + 10\nend)",
      "map:launch(1, 8, out, a)",                                  -- the report not kept
      "r = map:launch(1, 8, out, a); print(r:picture())",
      -- 2 zip: reads a twice
      "zip = torch.cuda.kernel(function(out, a, b) local i = threadIdx.x; out[i] = a[i] + b[i] + a[i] - a[i] end)",
      "r = zip:launch(1, 8, out, a, b)",
      "zip = torch.cuda.kernel(function(out, a, b) local i = threadIdx.x; out[i] = a[i] + b[i] end)",
      "r = zip:launch(1, 8, out, a, b)",
      -- 3 guards: no guard; a guard with 1-based habits; right
      map1d("guard", "out, a, n", "out[i] = a[i] + 10"),
      "r = guard:launch(1, 16, out, a, n)",
      "guard = torch.cuda.kernel(function(out, a, n) local i = threadIdx.x + 1; if i < n then out[i] = a[i] + 10 end end)",
      "r = guard:launch(1, 16, out, a, n)",
      map1d("guard", "out, a, n", "if i < n then out[i] = a[i] + 10 end"),
      "r = guard:launch(1, 16, out, a, n)",
      -- 4 2-D blocks: the column unguarded
      "map2d = torch.cuda.kernel(function(out, a, n)\n  local row, col = threadIdx.y, threadIdx.x\n" ..
        "  if row < n then out[row * n + col] = a[row * n + col] + 10 end\nend)",
      "r = map2d:launch(1, {8, 8}, out, a, n)",
      "map2d = torch.cuda.kernel(function(out, a, n)\n  local row, col = threadIdx.y, threadIdx.x\n" ..
        "  if row < n and col < n then out[row * n + col] = a[row * n + col] + 10 end\nend)",
      "r = map2d:launch(1, {8, 8}, out, a, n)",
      -- 5 broadcast
      "bcast = torch.cuda.kernel(function(out, a, b, n)\n  local row, col = threadIdx.y, threadIdx.x\n" ..
        "  if row < n and col < n then out[row * n + col] = a[row] + b[col] end\nend)",
      "r = bcast:launch(1, {8, 8}, out, a, b, n)",
      -- 6 blocks: too few, then enough
      map1d("blocks", "out, a, n", "if i < n then out[i] = a[i] + 10 end"),
      "r = blocks:launch(4, 64, out, a, n)",
      "r = blocks:launch((n + 63) // 64, 64, out, a, n)",
      -- 7 shared memory: the barrier missing, then right
      "rev = torch.cuda.kernel(function(out, a)\n  local s = shared(64)\n  local t = threadIdx.x\n" ..
        "  local i = blockIdx.x * blockDim.x + t\n  s[t] = a[i]\n  out[i] = s[blockDim.x - 1 - t]\nend)",
      "r = rev:launch(4, 64, out, a)",
      "rev = torch.cuda.kernel(function(out, a)\n  local s = shared(64)\n  local t = threadIdx.x\n" ..
        "  local i = blockIdx.x * blockDim.x + t\n  s[t] = a[i]\n  syncthreads()\n  out[i] = s[blockDim.x - 1 - t]\nend)",
      "r = rev:launch(4, 64, out, a)",
      -- 8 pooling: from global memory (189 reads), then shared
      "pool = torch.cuda.kernel(function(out, a, n)\n  local i = threadIdx.x\n  local acc = a[i]\n" ..
        "  if i >= 1 then acc = acc + a[i - 1] end\n  if i >= 2 then acc = acc + a[i - 2] end\n  out[i] = acc\nend)",
      "r = pool:launch(1, 64, out, a, n)",
      "pool = torch.cuda.kernel(function(out, a, n)\n  local s = shared(64)\n  local i = threadIdx.x\n  s[i] = a[i]\n" ..
        "  syncthreads()\n  local acc = s[i]\n  if i >= 1 then acc = acc + s[i - 1] end\n" ..
        "  if i >= 2 then acc = acc + s[i - 2] end\n  out[i] = acc\nend)",
      "r = pool:launch(1, 64, out, a, n)",
      -- 9 dot: a barrier inside the `if`; / for //; launched twice into out; zeroed
      (DOT:gsub("    if t < h then s%[t%] = s%[t%] %+ s%[t %+ h%] end\n    syncthreads%(%)",
        "    if t < h then s[t] = s[t] + s[t + h]; syncthreads() end")),
      "r = dot:launch(3, 128, out, a, b, n)",
      (DOT:gsub("//", "/")),                                     -- h = 64.0, ..., 1.0, 0.5: s[t + 0.5]
      "r = dot:launch(3, 128, out, a, b, n)",
      DOT,
      "r = dot:launch(3, 128, out, a, b, n); r = dot:launch(3, 128, out, a, b, n)",
      "out:zero_(); r = dot:launch(3, 128, out, a, b, n)",
      -- 10 prefix sum
      "scan = torch.cuda.kernel(function(out, a, n)\n  local s = shared(64)\n  local t = threadIdx.x\n  s[t] = a[t]\n" ..
        "  syncthreads()\n  local d = 1\n  while d < n do\n    local v = s[t]\n    if t >= d then v = v + s[t - d] end\n" ..
        "    syncthreads()\n    s[t] = v\n    syncthreads()\n    d = d * 2\n  end\n  out[t] = s[t]\nend)",
      "r = scan:launch(1, 64, out, a, n)",
      -- 11 sum along an axis: a thread per row (513 sectors), then a block per row
      "rowsum = torch.cuda.kernel(function(out, a, m)\n  local row = threadIdx.x\n  local acc = 0\n" ..
        "  for j = 0, m - 1 do acc = acc + a[row * m + j] end\n  out[row] = acc\nend)",
      "r = rowsum:launch(1, 8, out, a, 64)",
      "rowsum = torch.cuda.kernel(function(out, a, m)\n  local s = shared(64)\n  local t, row = threadIdx.x, blockIdx.x\n" ..
        "  s[t] = a[row * m + t]\n  syncthreads()\n" .. REDUCE .. "\n  if t == 0 then out[row] = s[0] end\nend)",
      "r = rowsum:launch(8, 64, out, a, 64)",
      -- 12 the naive product
      "matmul = torch.cuda.kernel(function(c, a, b, n)\n  local row = blockIdx.y * blockDim.y + threadIdx.y\n" ..
        "  local col = blockIdx.x * blockDim.x + threadIdx.x\n  if row < n and col < n then\n    local acc = 0\n" ..
        "    for k = 0, n - 1 do acc = acc + a[row * n + k] * b[k * n + col] end\n    c[row * n + col] = acc\n  end\nend)",
      "rn = matmul:launch({2, 2}, {16, 16}, C, A, B, n)",
      -- 13 tiled: the second barrier missing, then right
      tiled(false), TILED_LAUNCH,
      tiled(true), TILED_LAUNCH,
    })
    assert.are.equal(0, code, err)
    assert.truthy(has(out, "this lesson uses 1 SIMULATED CUDA devices"), out)
    assert.truthy(has(out, "!! INSIDE A KERNEL, POSITIONS START AT 0"), out)
    assert.are.equal(13, count(out, "✓"), out)
    assert.truthy(has(out, "Lesson complete"), out)
    assert.are.equal("kernels\t14\n", state)
    -- the picture of step 1's block
    assert.truthy(has(out, "│t0      │t1      │"), out)
    assert.truthy(has(out, "│w out[0]│w out[1]│"), out)
    local hints = {
      "index 8 of a is past its end (a has 8 elements, indices 0..7): off by one. Inside kernels positions start at 0",
      "keep the launch's report: `r = map:launch(...)`",
      "the values are right, but r.global_reads is 32: two arrays of 8, each element read once, is 16 reads, not 32",
      "index 10 of a is past its end (a has 10 elements, indices 0..9): the launch has more threads than elements, " ..
        "so the extra threads must do nothing: guard the work with `if i < n then ... end`",
      "out[0] was never written: inside kernels positions start at 0, so thread 0 handles element 0 (no + 1)",
      "index 25 of a is past its end (a has 25 elements, indices 0..24): the launch has more threads than elements",
      "elements 256..299 of out were never written: the launch has 256 threads (4 blocks of 64) for 300 elements; " ..
        "launch enough blocks: (n + 63) // 64",
      "a syncthreads() is missing: one thread reads what another writes, so they must wait for each other. " ..
        "Here: s[t] = a[i]; syncthreads(); out[i] = s[63 - t].",
      "the values are right, but r.global_reads is 189: your kernel read a 189 times; load each element into shared memory once",
      "syncthreads() inside an `if` that not every thread takes hangs the block: move it out of the `if`",
      "an index must be an integer: / gives a float in Lua, // divides to an integer (n // 2)",
      "out holds 2 times the answer: atomic_add adds to what out held, and it held an earlier launch's result; " ..
        "zero it first (out:zero_()), then launch once",
      "the values are right, but the reads touch 513 sectors",
      "a syncthreads() is missing: one thread reads what another writes, so they must wait for each other. " ..
        "Here: one after loading the two tiles, before the k loop; one after the k loop",
    }
    local at = 1
    for _, h in ipairs(hints) do
      local a = out:find("✗ Not yet: " .. h, at, true)
      assert.truthy(a, "missing or out of order: " .. h .. "\n" .. out)
      at = a + 1
    end
    assert.are.equal(#hints, count(out, "✗ Not yet"), out)
    assert.truthy(has(out, "guard the work with `if i < n then ... end` (both row and column: " ..
      "`if row < n and col < n then`)"), out)
    -- the step's done lines, with the counts
    assert.truthy(has(out, "✓ 3 atomics instead of 300."), out)
    assert.truthy(has(out, "✓ 2n^3/16 = 4096 global reads instead of 65536."), out)
  end)

  lesson_it("every step's setup works in a new session: resumed anywhere, its tensors are made", function()
    for at = 2, 13 do
      local out, err, code = kernels_from(at, { "" })
      assert.are.equal(0, code, err)
      assert.truthy(has(out, "Resuming at step " .. at .. " "), out)
      assert.truthy(has(out, "(this step's tensors: "), out)
      assert.falsy(has(out, "could not make"), out)
      assert.falsy(has(out, "setup failed"), out)
    end
  end)

  lesson_it("resumed at the tiled product in a new session, the right kernel passes it and ends the lesson", function()
    local out, err, code, state = kernels_from(13, { tiled(true), TILED_LAUNCH, "print(rt.global_reads)" })
    assert.are.equal(0, code, err)
    assert.truthy(has(out, "(this step's tensors: A = torch.rand(32, 32):cuda(); B = "), out)
    assert.truthy(has(out, "✓ 2n^3/16 = 4096"), out)
    assert.truthy(has(out, "\n4096\n"), out)
    assert.are.equal("kernels\t14\n", state)
  end)

  lesson_it("a launch that is not the step's, or a cell defining the kernel, stays quiet", function()
    local out, err, code, state = kernels_from(2, {
      "zip = torch.cuda.kernel(function(out, a, b) local i = threadIdx.x; out[i] = a[i] + b[i] end)",
      "x = 1 + 1",
    })
    assert.are.equal(0, code, err)
    assert.are.equal(0, count(out, "✗"), out)
    assert.are.equal("kernels\t2\n", state)
  end)
end)
