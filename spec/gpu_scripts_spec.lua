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
end)
