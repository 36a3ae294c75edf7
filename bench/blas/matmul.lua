-- gshell's side of bench/blas/run.sh: torch.matmul GFLOP/s on n x n
-- float32, timed as bench/lua/ops.lua times it (warm-up, median of reps).
local torch = require("torch")
local function median(t) table.sort(t); local n = #t; return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2 end
for _, spec in ipairs({ { 500, 50, 5 }, { 2000, 1, 5 } }) do
  local n, iters, reps = spec[1], spec[2], spec[3]
  local a, b = torch.randn(n, n), torch.randn(n, n)
  for _ = 1, math.max(iters, 4) do local _ = torch.matmul(a, b) end
  local times = {}
  for r = 1, reps do
    local t0 = torch.clock()
    for _ = 1, iters do local _ = torch.matmul(a, b) end
    times[r] = (torch.clock() - t0) / iters
  end
  print(string.format("matmul_%d %.6g GFLOP/s", n, 2 * n ^ 3 / median(times) / 1e9))
end
