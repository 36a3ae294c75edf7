-- bench/run.sh's table (issue 24: no silent regressions): each row shows
-- the previous run's ratio beside the new one, a ratio more than 15% below
-- it is flagged DROP (and fails the run with BENCH_FAIL_ON_DROP=1), and
-- every run appends its ratios to cpu-history.tsv beside the results file.
-- Issue 32: the ratio is the median of per-pair ratios over the alternating
-- rounds, with its spread; the results name the CPU (model, x86-64 level,
-- AVX-512 flags, cores), and the previous ratio is the last one recorded on
-- the same CPU model. BENCH_REPLAY feeds the script fixed measurements and
-- BENCH_CPUINFO a made-up /proc/cpuinfo, so nothing is timed.

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

-- made-up /proc/cpuinfo files: an AVX2 EPYC (2 processors), an AVX-512
-- Xeon (4) and an SSE4.2-only machine (1)
local V2 = "fpu sse sse2 ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm"
local V3 = V2 .. " avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
local function cpuinfo(model, flags, n)
  local t = {}
  for i = 0, n - 1 do
    t[#t + 1] = ("processor\t: %d\nmodel name\t: %s\nflags\t\t: %s\n\n"):format(i, model, flags)
  end
  return table.concat(t)
end
local CPU = {
  epyc = cpuinfo("AMD EPYC", V3, 2),
  xeon = cpuinfo("Intel(R) Xeon(R) Platinum 8480+", V3 .. " avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16 amx_tile", 4),
  old = cpuinfo("Intel(R) Core(TM) i7 CPU 920", V2, 1),
}

describe("bench/run.sh: previous ratios and drops", function()
  local dir
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/replay"))
  end)
  after_each(function() os.execute("rm -rf " .. dir) end)

  local function replay(gshell, pytorch, env, cpuinfo)
    write(dir .. "/replay/gshell", gshell)
    write(dir .. "/replay/pytorch", pytorch)
    write(dir .. "/cpuinfo", cpuinfo or CPU.epyc)
    -- (no sanitizer preload: sh and awk are not instrumented, and would
    -- report their own leaks under a SANITIZE=1 run)
    return sh(("LD_PRELOAD= %s BENCH_REPLAY=%s/replay BENCH_OUT=%s/cpu-latest.md BENCH_CPUINFO=%s/cpuinfo sh bench/run.sh")
      :format(env or "", dir, dir, dir))
  end

  it("first run: no previous ratio; second run: the previous beside the new, a fall past 15% flagged", function()
    -- first run: matmul_500 ratio 1.0, sum_16M 1.0, startup (lower is better) 50x
    local out, code = replay("startup 20 ms\nmatmul_500 100 GFLOP/s\nsum_16M 40 GB/s\n",
      "startup 1000 ms\nmatmul_500 100 GFLOP/s\nsum_16M 40 GB/s\n")
    assert.are.equal(0, code, out)
    local first = read(dir .. "/cpu-latest.md")
    assert.truthy(first:find("previous ratio (none for AMD EPYC)", 1, true), first)
    assert.truthy(row(first, "matmul 500x500"):find("| 1.00x | 1 pair | - |", 1, true), first)
    assert.truthy(out:find("no earlier result on this CPU (AMD EPYC)", 1, true), out)

    -- second run: matmul 0.80x (-20%: a drop), sum 0.90x (-10%: not one),
    -- start-up 40x (-20% on a lower-is-better row: a drop)
    out, code = replay("startup 25 ms\nmatmul_500 80 GFLOP/s\nsum_16M 36 GB/s\n",
      "startup 1000 ms\nmatmul_500 100 GFLOP/s\nsum_16M 40 GB/s\n")
    assert.are.equal(0, code, out)
    local second = read(dir .. "/cpu-latest.md")
    assert.truthy(second:find("previous ratio (AMD EPYC, " .. first:match("%- date: ([^\n]+)") .. ")", 1, true), second)
    assert.truthy(row(second, "matmul 500x500"):find("| 0.800x | 1 pair | 1.00x (**DROP -20%**) |", 1, true), second)
    assert.truthy(row(second, "x:sum(), 16M"):find("| 0.900x | 1 pair | 1.00x (-10%) |", 1, true), second)
    assert.truthy(row(second, "start-up"):find("| 40.0x | 1 pair | 50.0x (**DROP -20%**) |", 1, true), second)
    assert.truthy(out:find("bench: ratio DROP since the last run on this CPU: matmul 500x500 float32", 1, true), out)
    assert.falsy(out:find("DROP since the last run on this CPU: x:sum()", 1, true), out)
    -- a row measured by neither run has no previous ratio
    assert.truthy(row(second, "matmul 2000x2000"):find("| n/a | - | - |", 1, true), second)

    -- the history: a header and one line per benchmark per run
    local hist = read(dir .. "/cpu-history.tsv")
    local _, lines = hist:gsub("\n", "")
    local _, rows = first:gsub("\n| [^-]", "")
    assert.truthy(hist:find("^date\tcommit\tbenchmark\tgshell\tpytorch\tratio\tload_before\tcpu\tratio_min\tratio_max\n"), hist)
    assert.truthy(hist:find("\tmatmul_500\t80\t100\t0.800\t[^\t]*\tAMD EPYC\t0.800\t0.800\n"), hist)
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

  it("the ratio is the median of per-pair ratios, with the smallest and largest pair", function()
    -- matmul rounds (higher is better): gshell 100, 60, 70 against pytorch
    -- 80, 75, 100: pairs 1.25, 0.8, 0.7, median 0.8 (each side's best
    -- would give 1.0x, the medians' ratio 0.875x); start-up (lower is
    -- better): 20 ms vs 1000, 10 vs 600: pairs 50 and 60, median 55; a
    -- failed round ("nan") leaves its pair out
    local out, code = replay(
      "startup 20 ms\nmatmul_500 100 GFLOP/s\nstartup 10 ms\nmatmul_500 60 GFLOP/s\nmatmul_500 70 GFLOP/s\nsum_16M nan GB/s\nsum_16M 30 GB/s\n",
      "startup 1000 ms\nmatmul_500 80 GFLOP/s\nstartup 600 ms\nmatmul_500 75 GFLOP/s\nmatmul_500 100 GFLOP/s\nsum_16M 50 GB/s\nsum_16M 40 GB/s\n")
    assert.are.equal(0, code, out)
    local t = read(dir .. "/cpu-latest.md")
    -- each side's column is its median round
    assert.truthy(row(t, "matmul 500x500"):find("| 70.0 GFLOP/s | 80.0 GFLOP/s | 0.800x | 0.700x-1.25x (3 pairs) |", 1, true), t)
    assert.truthy(row(t, "matmul 500x500"):find("| MISS |", 1, true), t)
    assert.truthy(row(t, "start-up"):find("| 55.0x | 50.0x-60.0x (2 pairs) |", 1, true), t)
    assert.truthy(row(t, "x:sum(), 16M"):find("| 0.750x | 1 pair |", 1, true), t)
    assert.truthy(t:find("median of per-pair ratios", 1, true), t)
    local hist = read(dir .. "/cpu-history.tsv")
    assert.truthy(hist:find("\tmatmul_500\t70\t80\t0.800\t[^\t]*\tAMD EPYC\t0.700\t1.250\n"), hist)
  end)

  it("names the machine: CPU model, x86-64 level, AVX-512 flags, cores", function()
    local _, code = replay("matmul_500 100 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", nil, CPU.xeon)
    assert.are.equal(0, code)
    local m = read(dir .. "/cpu-latest.md"):match("%- machine: ([^\n]+)")
    assert.truthy(m:find("^Intel%(R%) Xeon%(R%) Platinum 8480%+ %(x86%-64%-v4, avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16%), 4 cores, "), m)
    replay("matmul_500 100 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", nil, CPU.epyc)
    m = read(dir .. "/cpu-latest.md"):match("%- machine: ([^\n]+)")
    assert.truthy(m:find("^AMD EPYC %(x86%-64%-v3, no AVX%-512%), 2 cores, "), m)
    replay("matmul_500 100 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", nil, CPU.old)
    m = read(dir .. "/cpu-latest.md"):match("%- machine: ([^\n]+)")
    assert.truthy(m:find("^Intel%(R%) Core%(TM%) i7 CPU 920 %(x86%-64%-v2, no AVX%-512%), 1 cores, "), m)
    -- the AVX-512 flags alone do not make v4 without all five
    replay("matmul_500 100 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", nil, cpuinfo("Odd", V3 .. " avx512f", 1))
    m = read(dir .. "/cpu-latest.md"):match("%- machine: ([^\n]+)")
    assert.truthy(m:find("^Odd %(x86%-64%-v3, avx512f%)"), m)
  end)

  it("a drop is flagged against the last run on the same CPU model, not another CPU's", function()
    -- the EPYC at 1.0x, then a Xeon at 0.7x: nothing earlier on a Xeon
    replay("matmul_500 100 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", nil, CPU.epyc)
    local out, code = replay("matmul_500 70 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", "BENCH_FAIL_ON_DROP=1", CPU.xeon)
    assert.are.equal(0, code, out)
    local t = read(dir .. "/cpu-latest.md")
    assert.truthy(t:find("previous ratio (none for Intel(R) Xeon(R) Platinum 8480+)", 1, true), t)
    assert.truthy(out:find("no earlier result on this CPU (Intel(R) Xeon(R) Platinum 8480+)", 1, true), out)
    -- the EPYC again at 0.8x: -20% against the EPYC's 1.0x (against the
    -- Xeon's 0.7x it would be a rise)
    out, code = replay("matmul_500 80 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", "BENCH_FAIL_ON_DROP=1", CPU.epyc)
    assert.are.equal(3, code, out)
    t = read(dir .. "/cpu-latest.md")
    assert.truthy(row(t, "matmul 500x500"):find("| 1.00x (**DROP -20%**) |", 1, true), t)
    assert.truthy(t:find("previous ratio (AMD EPYC, ", 1, true), t)
    -- the Xeon again at 0.72x: +3% against its own 0.7x
    out, code = replay("matmul_500 72 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", "BENCH_FAIL_ON_DROP=1", CPU.xeon)
    assert.are.equal(0, code, out)
    assert.truthy(row(read(dir .. "/cpu-latest.md"), "matmul 500x500"):find("| 0.700x (+3%) |", 1, true))
  end)

  it("results from before issue 32 still read: an old history's header gains the columns, an old results file on the same CPU is the previous run", function()
    -- the layout of bench/results/ before: no CPU column in the history,
    -- "N cores, MODEL, RAM" in the results file, no spread column
    write(dir .. "/cpu-history.tsv", "date\tcommit\tbenchmark\tgshell\tpytorch\tratio\tload_before\n"
      .. "2026-11-26 03:04\tcbe044f\tmatmul_500\t200\t200\t1.000\t1.09\n")
    local old = "# gshell vs PyTorch, CPU\n\n- date: 2026-11-26 03:04 UTC\n- machine: 2 cores, AMD EPYC, 24 GiB RAM\n\n"
      .. "| benchmark | gshell | pytorch | ratio (>1: gshell better) | previous ratio (none) | target | result |\n"
      .. "| --- | ---: | ---: | ---: | ---: | --- | --- |\n"
      .. "| matmul 500x500 float32 | 200 GFLOP/s | 200 GFLOP/s | 1.00x | - | >= 0.95x | PASS |\n"
    write(dir .. "/cpu-latest.md", old)
    -- another CPU: the old file is not its previous run
    local out = replay("matmul_500 80 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", nil, CPU.xeon)
    assert.truthy(read(dir .. "/cpu-latest.md"):find("previous ratio (none for Intel", 1, true), out)
    write(dir .. "/cpu-latest.md", old)
    write(dir .. "/cpu-history.tsv", "date\tcommit\tbenchmark\tgshell\tpytorch\tratio\tload_before\n"
      .. "2026-11-26 03:04\tcbe044f\tmatmul_500\t200\t200\t1.000\t1.09\n")
    out = replay("matmul_500 80 GFLOP/s\n", "matmul_500 100 GFLOP/s\n", nil, CPU.epyc)
    local t = read(dir .. "/cpu-latest.md")
    assert.truthy(t:find("previous ratio (AMD EPYC, 2026-11-26 03:04 UTC)", 1, true), t)
    assert.truthy(row(t, "matmul 500x500"):find("| 1.00x (**DROP -20%**) |", 1, true), t)
    local hist = read(dir .. "/cpu-history.tsv")
    assert.truthy(hist:find("^date\tcommit\tbenchmark\tgshell\tpytorch\tratio\tload_before\tcpu\tratio_min\tratio_max\n"
      .. "2026%-11%-26 03:04\tcbe044f\tmatmul_500\t200\t200\t1.000\t1.09\n"), hist)
  end)
end)
