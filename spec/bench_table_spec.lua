-- bench/run.sh's table (issue 24: no silent regressions): each row shows
-- the previous run's ratio beside the new one, a ratio more than 15% below
-- it is flagged DROP (and fails the run with BENCH_FAIL_ON_DROP=1), and
-- every run appends its ratios to cpu-history.tsv beside the results file.
-- BENCH_REPLAY feeds the script fixed measurements, so nothing is timed.

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit=$?\"")
  local out = p:read("a")
  p:close()
  local code = tonumber(out:match("exit=(%d+)\n?$"))
  return out, code
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function read(path)
  local f = io.open(path)
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- the row of a markdown table whose first cell starts with `label`
local function row(text, label)
  for line in text:gmatch("[^\n]+") do
    if line:sub(1, 2 + #label) == "| " .. label then return line end
  end
end

describe("bench/run.sh: previous ratios and drops", function()
  local dir
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/replay"))
  end)
  after_each(function() os.execute("rm -rf " .. dir) end)

  local function replay(gshell, pytorch, env)
    write(dir .. "/replay/gshell", gshell)
    write(dir .. "/replay/pytorch", pytorch)
    -- (no sanitizer preload: sh and awk are not instrumented, and would
    -- report their own leaks under a SANITIZE=1 run)
    return sh(("LD_PRELOAD= %s BENCH_REPLAY=%s/replay BENCH_OUT=%s/cpu-latest.md sh bench/run.sh")
      :format(env or "", dir, dir))
  end

  it("first run: no previous ratio; second run: the previous beside the new, a fall past 15% flagged", function()
    -- first run: matmul_500 ratio 1.0, sum_16M 1.0, startup (lower is better) 50x
    local out, code = replay("startup 20 ms\nmatmul_500 100 GFLOP/s\nsum_16M 40 GB/s\n",
      "startup 1000 ms\nmatmul_500 100 GFLOP/s\nsum_16M 40 GB/s\n")
    assert.are.equal(0, code, out)
    local first = read(dir .. "/cpu-latest.md")
    assert.truthy(first:find("previous ratio (none)", 1, true), first)
    assert.truthy(row(first, "matmul 500x500"):find("| 1.00x | - |", 1, true), first)

    -- second run: matmul 0.80x (-20%: a drop), sum 0.90x (-10%: not one),
    -- start-up 40x (-20% on a lower-is-better row: a drop)
    out, code = replay("startup 25 ms\nmatmul_500 80 GFLOP/s\nsum_16M 36 GB/s\n",
      "startup 1000 ms\nmatmul_500 100 GFLOP/s\nsum_16M 40 GB/s\n")
    assert.are.equal(0, code, out)
    local second = read(dir .. "/cpu-latest.md")
    assert.truthy(second:find("previous ratio (" .. first:match("%- date: ([^\n]+)") .. ")", 1, true), second)
    assert.truthy(row(second, "matmul 500x500"):find("| 0.800x | 1.00x (**DROP -20%**) |", 1, true), second)
    assert.truthy(row(second, "x:sum(), 16M"):find("| 0.900x | 1.00x (-10%) |", 1, true), second)
    assert.truthy(row(second, "start-up"):find("| 40.0x | 50.0x (**DROP -20%**) |", 1, true), second)
    assert.truthy(out:find("bench: ratio DROP since the previous run: matmul 500x500 float32", 1, true), out)
    assert.falsy(out:find("DROP since the previous run: x:sum()", 1, true), out)
    -- a row measured by neither run has no previous ratio
    assert.truthy(row(second, "matmul 2000x2000"):find("| n/a | - |", 1, true), second)

    -- the history: a header and one line per benchmark per run
    local hist = read(dir .. "/cpu-history.tsv")
    local _, lines = hist:gsub("\n", "")
    local _, rows = first:gsub("\n| [^-]", "")
    assert.truthy(hist:find("^date\tcommit\tbenchmark\tgshell\tpytorch\tratio\tload_before\n"), hist)
    assert.truthy(hist:find("\tmatmul_500\t80\t100\t0.800\t", 1, true), hist)
    assert.is_true(lines >= 2 * 3 + 1, hist)
    assert.is_true(rows > 0)
  end)

  it("BENCH_FAIL_ON_DROP=1 makes a drop fail the run (exit 3), and only a drop", function()
    replay("matmul_500 100 GFLOP/s\n", "matmul_500 100 GFLOP/s\n")
    local out, code = replay("matmul_500 90 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", "BENCH_FAIL_ON_DROP=1")
    assert.are.equal(0, code, out)
    out, code = replay("matmul_500 70 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", "BENCH_FAIL_ON_DROP=1")
    assert.are.equal(3, code, out)
    assert.truthy(out:find("DROP", 1, true), out)
  end)
end)
