-- tools/fit_gpu_model.lua (issue 29's calibration): fits the time model's
-- efficiency factors to measurements in tools/gpu_calib.lua's format. On a
-- synthetic measurement file, made from the model's own formulas with
-- known factors changed (a copy at 0.9 of the datasheet's bandwidth, an
-- SGEMM at a best share of 0.85 instead of 0.92, TF32 at 0.7 instead of
-- 0.8, pinned copies at 0.7 of the PCIe link, pageable ones at half of
-- that, a 4 us launch), it finds those factors back; and tools/gpu_calib.lua
-- runs on a simulated GPU and writes lines the fit reads.
local torch = require("torch")
local R = require("gshell_run")

local function near(want, got, what)
  assert(got and math.abs(got - want) <= 1e-3 * math.abs(want),
    string.format("%s: expected %.6g, got %s", what, want, tostring(got)))
end

local function fitted(out, name)
  return tonumber(out:match("\n  " .. name .. " = ([%d.e+-]+),"))
end

describe("tools/fit_gpu_model.lua", function()
  it("finds known factors back from a synthetic measurement file", function()
    local m = torch.cuda.gpu_model("a100")
    local link = 8e9 * 128 / 130 / 8 * 2 ^ (m.pcie_gen - 3) * m.pcie_lanes
    local bytes = 2 ^ 26
    local old = torch._allow_tf32()
    local function compute(n, tf32)
      torch._set_allow_tf32(tf32)
      local t = torch.cuda._model_time("a100", "gemm", { m = n, n = n, k = n }) - m.launch
      torch._set_allow_tf32(old)
      return t
    end
    local lines = {
      "device NVIDIA A100-SXM4-80GB (synthetic)",
      string.format("copy %d %.17g", 2 * bytes, m.launch + 2 * bytes / (0.9 * m.bandwidth)),
      string.format("gemm fp32 4096 %.17g", m.launch + compute(4096, false) * 0.92 / 0.85),
      string.format("gemm fp32 8192 %.17g", m.launch + compute(8192, false) * 0.92 / 0.85),
      string.format("gemm tf32 8192 %.17g", m.launch + compute(8192, true) * 0.80 / 0.70),
      "launch 4e-06",
      string.format("h2d pinned %d %.17g", bytes, 10e-6 + bytes / (0.7 * link)),
      string.format("h2d pageable %d %.17g", bytes, 10e-6 + bytes / (0.35 * link)),
      "step lenet 256 0.0011",
    }
    local dir = R.tmpdir()
    R.write_file(dir .. "/calib.txt", table.concat(lines, "\n") .. "\n")
    local out, err, code = R.run({ "tools/fit_gpu_model.lua", "a100", dir .. "/calib.txt" }, "", {})
    os.execute("rm -rf " .. R.quote(dir))
    assert.are.equal(0, code, out .. err)
    near(0.9, fitted(out, "bandwidth_share"), "bandwidth")
    near(0.85, fitted(out, "gemm_best_fp32"), "SGEMM best share")
    near(0.70, fitted(out, "gemm_best_tf32"), "TF32 best share")
    near(0.7, fitted(out, "h2d_pcie_share"), "pinned PCIe share")
    near(0.5, fitted(out, "h2d_pageable_share"), "pageable share")
    near(4e-6, fitted(out, "host_launch"), "launch")
    assert.truthy(out:find("| lenet training step, batch 256 | - | 232727 examples/s | - |", 1, true), out)
    assert.truthy(out:find("## NVIDIA A100-SXM4-80GB (synthetic) against the a100 model", 1, true), out)
  end)

  it("reads what tools/gpu_calib.lua measures on a simulated GPU (its dry run)", function()
    local env = { GSHELL_SIM_GPUS = "1", CUDA_VISIBLE_DEVICES = "", GSHELL_GPU_MODEL = "v100" }
    local calib, err, code = R.run({ "tools/gpu_calib.lua", "quick" }, "", env)
    assert.are.equal(0, code, calib .. err)
    for _, l in ipairs({ "^device Tesla V100", "\ncopy %d+ ", "\ngemm fp32 512 ", "\ngemm tf32 512 ", "\nlaunch ",
      "\nh2d pinned %d+ ", "\nd2h pageable %d+ " }) do
      assert.truthy(calib:find(l), l .. " missing:\n" .. calib)
    end
    local dir = R.tmpdir()
    R.write_file(dir .. "/calib.txt", calib)
    local out, err2, code2 = R.run({ "tools/fit_gpu_model.lua", "v100", dir .. "/calib.txt" }, "", {})
    os.execute("rm -rf " .. R.quote(dir))
    assert.are.equal(0, code2, out .. err2)
    -- the V100 has no TF32: no TF32 row, and an SGEMM share was fitted
    assert.is_nil(fitted(out, "gemm_best_tf32"), out)
    assert.truthy(fitted(out, "gemm_best_fp32"), out)
  end)
end)
