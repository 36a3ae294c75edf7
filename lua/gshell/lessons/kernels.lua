-- `gshell --lesson kernels` (issue 30): writing GPU kernels in Lua with
-- the kernel lab (docs/kernel-lab.md), from a map to a 16x16 tiled matrix
-- product, in the order of GPU Puzzles. A plain data file (docs/shell.md,
-- "Writing a lesson"); the checks are gshell.lesson_kernels'. Each step's
-- setup makes its tensors afresh on cuda:0 (so the lesson resumes
-- anywhere) and each check wants the values of a tensor computation AND a
-- count from the launch's report. Sizes stay small (n of a few hundred at
-- most, 32x32 matrices) so every launch takes well under a second.
local K = require("gshell.lesson_kernels")

local F32 = "{dtype = torch.float32}"
local function arange(n) return "torch.arange(" .. n .. ", " .. F32 .. "):cuda()" end

-- a count target: report field `field` must be `want` (or at most it)
local function exactly(field, want, why)
  return function(r)
    if r[field] == want then return true end
    return false, string.format("the values are right, but r.%s is %d: %s", field, r[field], why(r[field]))
  end
end

local function both(...)
  local fs = { ... }
  return function(r, env)
    for _, f in ipairs(fs) do
      local ok, h = f(r, env)
      if not ok then return false, h end
    end
    return true
  end
end

local N_MM = 32

return {
  title = "Writing GPU kernels: threads, blocks, shared memory, a tiled matrix product (the kernel lab)",
  sim_gpus = 1,
  intro = [[
A kernel is a function every thread of the GPU runs at once, each with its
own threadIdx and blockIdx. Here kernels are Lua functions
(torch.cuda.kernel) run on a simulated GPU that counts every memory access
and models the time; r = k:launch(grid, block, ...) returns those counts.
Each step makes its tensors on cuda:0 and checks your kernel's values and
one of its counts. Type a kernel over several lines: the prompt waits for
its `end)`. docs/kernel-lab.md is the reference.]],
  setup = function()
    if torch.cuda.device_count() > 0 and not torch.cuda.is_simulated() then
      print("(This machine has a real GPU, and Lua kernels run on simulated ones only: " ..
        "start the lesson with `gshell --sim-gpus 1 --lesson kernels`.)")
    end
  end,
  steps = {
    {
      title = "Map",
      explain = [[
!! INSIDE A KERNEL, POSITIONS START AT 0, AS IN CUDA: a[0] is the first
!! element, a[n - 1] the last. OUTSIDE kernels gshell counts from 1 as
!! Lua does: out[1] at the prompt is the element the kernel calls out[0].
A tensor argument is a flat array; threadIdx.x is the thread's number in
its block (0, 1, 2, ...). Launch one block of 8 threads, one per element:

  map = torch.cuda.kernel(function(out, a)
    local i = threadIdx.x
    out[i] = ...
  end)]],
      task = "Write `map`, which adds 10 to each element of a, and run " ..
        "`r = map:launch(1, 8, out, a); print(r:picture())`.",
      setup = K.setup("r", { { "a", arange(8) }, { "out", "torch.zeros(8):cuda()" } }),
      check = K.check({ report = "r", out = "out", kernel = "map", dims = 1, block = 8,
        want = function(env) return env.a + 10 end,
        counts = exactly("global_reads", 8, function(g)
          return string.format("a map reads each of the 8 elements once; yours read %d (read a[i] into a local once)", g)
        end) }),
      done = "The picture shows each thread's cell: thread i read a[i] and wrote out[i]. print(r) gives the counts " ..
        "and the modelled time.",
    },
    {
      title = "Zip",
      explain = "A kernel takes several arrays: out, a and b here. Each thread handles the element with its number.",
      task = "Write `zip`, with out[i] = a[i] + b[i], and run `r = zip:launch(1, 8, out, a, b)`.",
      setup = K.setup("r", { { "a", arange(8) }, { "b", "(torch.arange(8, " .. F32 .. ") * 10):cuda()" },
        { "out", "torch.zeros(8):cuda()" } }),
      check = K.check({ report = "r", out = "out", kernel = "zip", dims = 1, block = 8,
        want = function(env) return env.a + env.b end,
        counts = both(exactly("global_reads", 16, function(g)
          return "two arrays of 8, each element read once, is 16 reads, not " .. g
        end), exactly("global_writes", 8, function(g) return "8 elements written once each, not " .. g end)) }),
    },
    {
      title = "Guards",
      explain = [[
Blocks come in fixed sizes, so a launch often has more threads than
elements: here 16 threads for 10 elements. The extra threads must touch
nothing: a real GPU would read or write past the array (here the launch
stops with an error naming the thread). Pass the size as a number: n.]],
      task = "Write `guard`, adding 10 to the n elements only, and run `r = guard:launch(1, 16, out, a, n)`.",
      setup = K.setup("r", { { "a", arange(10) }, { "out", "torch.zeros(10):cuda()" }, { "n", "10" } }),
      check = K.check({ report = "r", out = "out", kernel = "guard", dims = 1, block = 16,
        want = function(env) return env.a + 10 end,
        counts = exactly("global_reads", 10, function(g) return "the 10 elements read once each, not " .. g end) }),
      done = "Threads 10 to 15 ran too, and did nothing: the guard.",
    },
    {
      title = "2-D blocks",
      explain = [[
A block can be 2-D: {8, 8} is 8 x 8 threads, threadIdx.x the column and
threadIdx.y the row. A 5 x 5 matrix is a flat array of its rows: element
(row, col) is a[row * n + col] (both from 0).]],
      task = "Write `map2d`, adding 10 to each element of the 5x5 matrix a, and run " ..
        "`r = map2d:launch(1, {8, 8}, out, a, n)`.",
      setup = K.setup("r", { { "a", "torch.arange(25, " .. F32 .. "):reshape(5, 5):cuda()" },
        { "out", "torch.zeros(5, 5):cuda()" }, { "n", "5" } }),
      check = K.check({ report = "r", out = "out", kernel = "map2d", dims = 2,
        want = function(env) return env.a + 10 end,
        counts = exactly("global_reads", 25, function(g) return "25 elements read once each, not " .. g end) }),
    },
    {
      title = "Broadcast",
      explain = [[
a is a column (n x 1) and b a row (1 x n); out[row][col] = a[row] + b[col],
what a + b gives outside kernels. Each thread reads one of each.]],
      task = "Write `bcast` and run `r = bcast:launch(1, {8, 8}, out, a, b, n)`.",
      setup = K.setup("r", { { "a", "torch.arange(6, " .. F32 .. "):reshape(6, 1):cuda()" },
        { "b", "(torch.arange(6, " .. F32 .. ") * 10):reshape(1, 6):cuda()" },
        { "out", "torch.zeros(6, 6):cuda()" }, { "n", "6" } }),
      check = K.check({ report = "r", out = "out", kernel = "bcast", dims = 2,
        want = function(env) return env.a + env.b end,
        counts = exactly("global_reads", 72, function(g)
          return "each of the 36 threads reads a[row] and b[col] once: 72 reads, not " .. g
        end) }),
    },
    {
      title = "Blocks",
      explain = [[
A block holds at most 1024 threads; more work takes more blocks. Thread
threadIdx.x of block blockIdx.x handles element
blockIdx.x * blockDim.x + threadIdx.x. For n elements in blocks of 64,
(n + 63) // 64 blocks cover them all (the last one partly: guard it).]],
      task = "Write `blocks`, adding 10 to each of the n = 300 elements, and launch it with blocks of 64 threads: " ..
        "`r = blocks:launch(G, 64, out, a, n)` with G the number of blocks needed.",
      setup = K.setup("r", { { "a", arange(300) }, { "out", "torch.zeros(300):cuda()" }, { "n", "300" } }),
      check = K.check({ report = "r", out = "out", kernel = "blocks", dims = 1, block = 64,
        want = function(env) return env.a + 10 end,
        counts = exactly("global_reads", 300, function(g) return "300 elements read once each, not " .. g end) }),
      done = "5 blocks of 64: 320 threads, 20 of them guarded off.",
    },
    {
      title = "Shared memory",
      explain = [[
shared(64) is an array of 64 floats that the threads of one block share
(fast, on the chip); every thread calls it and gets the same array.
Threads only see each other's writes after a barrier: syncthreads() waits
until every thread of the block reached it.
Reverse each block's 64 elements: thread t stores a[i] into s[t], waits,
then writes s[63 - t] (blockDim.x - 1 - t) to out[i].]],
      task = "Write `rev` and run `r = rev:launch(4, 64, out, a)` (256 elements, 4 blocks).",
      setup = K.setup("r", { { "a", arange(256) }, { "out", "torch.zeros(256):cuda()" } }),
      check = K.check({ report = "r", out = "out", kernel = "rev", dims = 1, block = 64,
        barrier = "Here: s[t] = a[i]; syncthreads(); out[i] = s[63 - t].",
        want = function(env)
          local idx = {}
          for i = 0, 255 do idx[i + 1] = (i // 64) * 64 + 63 - i % 64 + 1 end
          return env.a:index_select(1, torch.tensor(idx):cuda())
        end,
        counts = both(exactly("global_reads", 256, function(g)
          return "each element is read from global memory once (into shared memory), not " .. g .. " times"
        end), exactly("shared_reads", 256, function(g) return "each thread reads s once: 256 reads, not " .. g end)) }),
    },
    {
      title = "Pooling",
      explain = [[
A window sum: out[i] = a[i - 2] + a[i - 1] + a[i] (leave out the terms
before a[0]). Reading the three from global memory reads each element 3
times; a block that first copies its elements into shared memory reads
each once, and the sums read shared memory, which is much faster.]],
      task = "Write `pool` with shared memory and run `r = pool:launch(1, 64, out, a, n)` (n = 64).",
      setup = K.setup("r", { { "a", arange(64) .. " + 1" }, { "out", "torch.zeros(64):cuda()" }, { "n", "64" } }),
      check = K.check({ report = "r", out = "out", kernel = "pool", dims = 1, block = 64,
        barrier = "Here: s[t] = a[i]; syncthreads(); then the sum of s[t - 2], s[t - 1], s[t].",
        want = function(env)
          local a = env.a
          local z = torch.zeros(1):cuda()
          local s1 = torch.cat({ z, a[{ { 1, 63 } }] })
          local s2 = torch.cat({ z, z, a[{ { 1, 62 } }] })
          return a + s1 + s2
        end,
        counts = exactly("global_reads", 64, function(g)
          return string.format("your kernel read a %d times; load each element into shared memory once " ..
            "(64 reads), then sum from there", g)
        end) }),
    },
    {
      title = "Dot product",
      explain = [[
out[0] = the sum of a[i] * b[i]. Each block of 128 threads puts its
products in s = shared(128) (0 past n), then adds them pairwise: with
h = 64, 32, ..., 1 the threads t < h do s[t] = s[t] + s[t + h], with a
syncthreads() after each round (outside the `if`). Thread 0 then adds the
block's s[0] to out with atomic_add(out, 0, s[0]): atomics let threads of
different blocks add to one place without losing updates.]],
      task = "Write `dot` and run `r = dot:launch(3, 128, out, a, b, n)` (n = 300; out starts at 0).",
      setup = K.setup("r", { { "a", "torch.rand(300):cuda()" }, { "b", "torch.rand(300):cuda()" },
        { "out", "torch.zeros(1):cuda()" }, { "n", "300" } }),
      check = K.check({ report = "r", out = "out", kernel = "dot", dims = 1, block = 128, accumulates = true,
        barrier = "Here: one after s[t] = ..., and one at the end of each round of the halving loop, " ..
          "outside `if t < h`.",
        want = function(env) return (env.a * env.b):sum():reshape(1) end,
        counts = function(r)
          local blocks = r.grid[1] * r.grid[2] * r.grid[3]
          if r.atomics <= blocks then return true end
          return false, string.format("the values are right, but r.atomics is %d: atomics on one address " ..
            "serialise; reduce in shared memory, then only thread 0 of each block adds (%d atomics)", r.atomics, blocks)
        end }),
      done = "3 atomics instead of 300.",
    },
    {
      title = "Prefix sum",
      explain = [[
out[i] = a[0] + ... + a[i], in one block of 64 threads. Copy a into
shared memory; then for d = 1, 2, 4, ..., 32 each thread t >= d adds
s[t - d] to its s[t]. All threads must read before any writes: keep the
value in a local, syncthreads(), store it, syncthreads().]],
      task = "Write `scan` and run `r = scan:launch(1, 64, out, a, n)` (n = 64).",
      setup = K.setup("r", { { "a", arange(64) .. " + 1" }, { "out", "torch.zeros(64):cuda()" }, { "n", "64" } }),
      check = K.check({ report = "r", out = "out", kernel = "scan", dims = 1, block = 64,
        barrier = "Here, in each round: local v = s[t] + s[t - d] (for t >= d); syncthreads(); s[t] = v; syncthreads().",
        want = function(env)
          local i = torch.arange(64)
          return (i:reshape(64, 1):ge(i:reshape(1, 64))):float():cuda():matmul(env.a)
        end,
        counts = exactly("global_reads", 64, function(g)
          return "each element of a is read from global memory once, not " .. g .. " times"
        end) }),
    },
    {
      title = "Sum along an axis",
      explain = [[
out[row] = the sum of row `row` of the 8 x 64 matrix a (a:sum(2) outside
kernels). Give each row a block of 64 threads: thread t reads a[row * 64 + t],
so a warp's 32 threads read 32 consecutive floats (4 sectors of 32 bytes:
"coalesced"), then the block reduces in shared memory as in the dot
product. r.sectors counts the 32-byte transactions.]],
      task = "Write `rowsum` and run `r = rowsum:launch(8, 64, out, a, 64)`.",
      setup = K.setup("r", { { "a", "torch.rand(8, 64):cuda()" }, { "out", "torch.zeros(8):cuda()" } }),
      check = K.check({ report = "r", out = "out", kernel = "rowsum", dims = 1, block = 64,
        barrier = "Here: after s[t] = a[...], and at the end of each round of the halving loop.",
        want = function(env) return env.a:sum(2) end,
        counts = function(r)
          if r.sectors <= 80 then return true end
          return false, string.format("the values are right, but the reads touch %d sectors; consecutive " ..
            "threads reading consecutive elements (thread t of block row reads a[row * 64 + t]) need 64, " ..
            "and the 8 writes 8", r.sectors)
        end }),
    },
    {
      title = "Matrix product",
      explain = [[
C = A B for n x n matrices (n = 32): the thread at (col, row) of the
grid computes C[row][col], the sum over k of A[row][k] * B[k][col]:

  local row = blockIdx.y * blockDim.y + threadIdx.y
  local col = blockIdx.x * blockDim.x + threadIdx.x

Each of the n^2 threads reads a row of A and a column of B: 2n^3 reads of
global memory.]],
      task = "Write `matmul` and run `rn = matmul:launch({2, 2}, {16, 16}, C, A, B, n)`.",
      setup = K.setup("rn", { { "A", "torch.rand(32, 32):cuda()" }, { "B", "torch.rand(32, 32):cuda()" },
        { "C", "torch.zeros(32, 32):cuda()" }, { "n", "32" } }),
      check = K.check({ report = "rn", out = "C", kernel = "matmul", dims = 2,
        want = function(env) return env.A:matmul(env.B) end,
        counts = function(r)
          local most = 2 * N_MM ^ 3
          if r.global_reads <= most then return true end
          return false, string.format("the values are right, but rn.global_reads is %d: a product reads at most " ..
            "2n^3 = %d (keep the sum in a local and write C once)", r.global_reads, most)
        end }),
      done = "2n^3 = 65536 global reads. print(rn) shows them with the time.",
    },
    {
      title = "Tiled matrix product",
      explain = [[
The tiled product loads a 16 x 16 tile of A and one of B into shared
memory (each thread loads one element of each), syncthreads(), multiplies
the tiles from shared memory, syncthreads() again before the next tiles
overwrite them; n // 16 tiles along k. Each element of A and B then comes
from global memory n/16 times instead of n: 2n^3/16 reads.

  local ta, tb = shared(16 * 16), shared(16 * 16)
  local tx, ty = threadIdx.x, threadIdx.y
  local row, col = blockIdx.y * 16 + ty, blockIdx.x * 16 + tx
  for t = 0, n // 16 - 1 do
    ta[ty * 16 + tx] = A[row * n + t * 16 + tx]
    ...]],
      task = "Write `tiled` and run `rt = tiled:launch({2, 2}, {16, 16}, C, A, B, n)`; then compare print(rt) " ..
        "with the naive product's counts.",
      setup = K.setup("rt", { { "A", "torch.rand(32, 32):cuda()" }, { "B", "torch.rand(32, 32):cuda()" },
        { "C", "torch.zeros(32, 32):cuda()" }, { "n", "32" } }),
      check = K.check({ report = "rt", out = "C", kernel = "tiled", dims = 2,
        barrier = "Here: one after loading the two tiles, before the k loop; one after the k loop, before " ..
          "the next tiles are loaded.",
        want = function(env) return env.A:matmul(env.B) end,
        counts = function(r)
          local most = 2 * N_MM ^ 3 // 16
          if r.global_reads <= most then return true end
          return false, string.format("the values are right, but rt.global_reads is %d; with 16 x 16 tiles " ..
            "it is at most 2n^3/16 = %d: multiply from the shared tiles, not from A and B", r.global_reads, most)
        end }),
      done = "2n^3/16 = 4096 global reads instead of 65536. At this size both are launch-bound; " ..
        "docs/kernel-lab.md shows them at 128 x 128, where the tile wins.",
    },
  },
  outro = [[
Map, zip, guards, 2-D blocks, broadcast, blocks, shared memory, pooling,
a dot product, a prefix sum, a reduction along an axis and two matrix
products: the kernels of GPU Puzzles, with their counts and times.
docs/kernel-lab.md has more: bank conflicts, occupancy, the time model.]],
}
