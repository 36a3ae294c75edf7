-- The scripts a session with a real GPU runs first (tools/gpu_check.lua,
-- tools/gpu_big.lua, carried in the GPU bundle) must themselves work when
-- that session comes: here they run through build/gshell on 2 simulated
-- GPUs, every check of the script exercised against the CPU kernels.
local R = require("gshell_run")

describe("the GPU check scripts on 2 simulated GPUs", function()
  it("gpu_check.lua --no-timing passes every check", function()
    local out, err, code = R.run({ "--sim-gpus", "2", "tools/gpu_check.lua", "--no-timing" }, "",
      { CUDA_VISIBLE_DEVICES = "" })
    assert.are.equal(0, code, out .. err)
    assert.falsy(out:find("\nFAIL ", 1, true), out)
    local passed, failed, skipped = out:match("\ngpu_check: (%d+) passed, (%d+) failed, (%d+) skipped\n")
    assert.truthy(passed, out)
    assert.are.equal("0", failed, out)
    assert.is_true(tonumber(passed) >= 200, out)
    -- the only check left out here is cuBLAS's workspace (no cuBLAS on a
    -- simulated device); the two-device copies ran
    assert.are.equal("1", skipped, out)
    assert.truthy(out:find("SKIP  cuBLAS workspace taken from the cache: simulated devices", 1, true), out)
  end)

  it("gpu_big.lua --small passes every check", function()
    local out, err, code = R.run({ "--sim-gpus", "2", "tools/gpu_big.lua", "--small" }, "",
      { CUDA_VISIBLE_DEVICES = "" })
    assert.are.equal(0, code, out .. err)
    assert.falsy(out:find("FAIL", 1, true), out)
    local passes = select(2, out:gsub("\nPASS  ", "\n"))
    if out:find("^PASS  ") then passes = passes + 1 end
    assert.is_true(passes >= 6, out)
    assert.truthy(out:find("\ngpu_big: 0 failed\n", 1, true), out)
  end)

  it("gpu_check.lua --only=WORDS runs just the checks whose names contain one of the words", function()
    local out, err, code = R.run({ "--sim-gpus", "2", "tools/gpu_check.lua", "--no-timing", "-v",
      "--only=transfer h2d,index_select every dim" }, "", { CUDA_VISIBLE_DEVICES = "" })
    assert.are.equal(0, code, out .. err)
    local names = {}
    for name in out:gmatch("\nPASS  ([^\n]+)") do names[#names + 1] = name end
    assert.is_true(#names >= 2, out)
    for _, name in ipairs(names) do
      assert.truthy(name:find("transfer h2d", 1, true) or name:find("index_select every dim", 1, true), name)
    end
    assert.truthy(out:find("\ngpu_check: " .. #names .. " passed, 0 failed, 0 skipped\n", 1, true), out)
  end)
end)

-- tools/gpu_run.sh: the whole GPU proof in one device call (issue 24). Its
-- dry run on simulated GPUs runs every part but the sanitizers' (no CUDA
-- kernels here), gpu_check on a subset to keep this quick. Plain run only:
-- the script starts a dozen gshell and python processes, none of them
-- instrumented by a sanitizer build's preload, so a sanitizer run would
-- only repeat what the plain one checks, ten times slower.
local H = require("helpers")
local plain_it = H.plain_it(it, pending, "gpu_run.sh drives uninstrumented gshell and python processes")

describe("tools/gpu_run.sh", function()
  local out_dir
  before_each(function()
    out_dir = os.tmpname()
    os.remove(out_dir)
  end)
  after_each(function() os.execute("rm -rf " .. out_dir) end)

  local function run(env)
    local build = os.getenv("GSHELL_BUILD") or "build"
    local p = io.popen(("GSHELL=%s/gshell GSHELL_SIM_GPUS=2 OUT=%s %s sh tools/gpu_run.sh 2>&1; echo \"exit=$?\"")
      :format(build, out_dir, env))
    local out = p:read("a")
    p:close()
    return out, tonumber(out:match("exit=(%d+)\n?$"))
  end
  local function read(name)
    local f = io.open(out_dir .. "/" .. name)
    if not f then return nil end
    local s = f:read("a")
    f:close()
    return s
  end

  plain_it("a dry run on 2 simulated GPUs writes every part's file and a summary, within its budget", function()
    local out, code = run("GPU_RUN_CHECK_ONLY='transfer,reductions float32'")
    assert.are.equal(0, code, out)
    -- eight files: the device tool brings back at most eight
    for _, f in ipairs({ "env.txt", "gpu_check.txt", "memcheck.txt", "gpu_big.txt", "bench.md", "calib.txt",
                         "racecheck.txt", "summary.txt" }) do
      assert.truthy(read(f), f .. " is missing\n" .. out)
    end
    local summary = read("summary.txt")
    for _, p in ipairs({ "env", "gpu_check", "memcheck", "gpu_big", "bench", "calib" }) do
      assert.truthy(summary:find("gpu_run: " .. p .. ": ok %(exit 0%) in %d+s, cap %d+s\n"), summary)
    end
    assert.truthy(summary:find("gpu_run: racecheck: skipped (simulated GPUs)", 1, true), summary)
    local total = tonumber(summary:match("gpu_run: total (%d+)s of 350s, 0 part%(s%) failed"))
    assert.truthy(total, summary)
    assert.is_true(total <= 350, summary)
    assert.truthy(read("env.txt"):find("cuda devices\t2", 1, true), read("env.txt"))
    assert.truthy(read("env.txt"):find("full collections", 1, true), read("env.txt"))
    assert.truthy(read("gpu_check.txt"):find("gpu_check: %d+ passed, 0 failed"), read("gpu_check.txt"))
    assert.truthy(read("memcheck.txt"):find("PASS  reductions float32", 1, true), read("memcheck.txt"))
    assert.truthy(read("gpu_big.txt"):find("gpu_big: 0 failed", 1, true), read("gpu_big.txt"))
    assert.truthy(read("bench.md"):find("| sum_64M_f32 | ", 1, true), read("bench.md"))
    -- the calibration's measurements and their fit against the simulated GPU's own model
    assert.truthy(read("calib.txt"):find("\ngemm fp32 512 [%d.e-]+\n"), read("calib.txt"))
    assert.truthy(read("calib.txt"):find("== fitted against the v100 model", 1, true), read("calib.txt"))
    assert.truthy(read("calib.txt"):find("\n  gemm_best_fp32 = ", 1, true), read("calib.txt"))
  end)

  plain_it("GPU_RUN_PARTS runs only the parts named (a second call after a fix)", function()
    local out, code = run("GPU_RUN_PARTS='env gpu_big'")
    assert.are.equal(0, code, out)
    local summary = read("summary.txt")
    assert.truthy(summary:find("gpu_run: env: ok", 1, true), summary)
    assert.truthy(summary:find("gpu_run: gpu_big: ok", 1, true), summary)
    for _, p in ipairs({ "gpu_check", "memcheck", "bench" }) do
      assert.truthy(summary:find("gpu_run: " .. p .. ": not asked for (GPU_RUN_PARTS)", 1, true), summary)
    end
  end)

  plain_it("a spent budget skips the parts left and says so", function()
    local out, code = run("GPU_RUN_BUDGET=4")
    assert.are.equal(0, code, out)
    local summary = read("summary.txt")
    for _, p in ipairs({ "env", "gpu_check", "memcheck", "gpu_big", "bench" }) do
      assert.truthy(summary:find("gpu_run: " .. p .. ": skipped, no time left", 1, true), summary)
      assert.truthy(out:find("gpu_run: " .. p .. ": skipped, no time left", 1, true), out)
    end
  end)
end)
