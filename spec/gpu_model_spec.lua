-- The GPU models and the time model's formulas (issue 29; docs/gpu-models.md,
-- docs/time-model.md), checked on cases worked by hand.
local torch = require("torch")

local T = torch.cuda._model_time
local GIB = 2 ^ 30

local function near(want, got, rel)
  rel = rel or 1e-12
  assert(math.abs(got - want) <= rel * math.abs(want),
    string.format("expected %.17g, got %.17g (relative %.3g)", want, got, (got - want) / want))
end

local function run(args)
  local gshell = (os.getenv("GSHELL_BUILD") or "build") .. "/gshell"
  local p = io.popen(gshell .. " " .. args .. " 2>&1; echo \"exit=$?\"")
  local out = p:read("a")
  p:close()
  return out
end

describe("GPU models", function()
  it("have the published figures (a sample of each table row)", function()
    assert.are.same({ "t4", "v100", "a100", "h100", "h200" }, torch.cuda.gpu_models())
    local v = torch.cuda.gpu_model("v100")
    assert.are.same({ "Tesla V100-SXM2-16GB", "Volta", 7, 0, 80, 1530 },
      { v.name, v.arch, v.major, v.minor, v.sms, v.boost_mhz })
    assert.are.same({ 15.7e12, 7.8e12, 0, 0, 125e12, 0 },
      { v.peak.fp32, v.peak.fp64, v.peak.fp64_tc, v.peak.tf32_tc, v.peak.fp16_tc, v.peak.bf16_tc })
    assert.are.same({ 16 * GIB, 900e9, 6 * 2 ^ 20, 3, 16, 300e9 },
      { v.memory, v.bandwidth, v.l2, v.pcie_gen, v.pcie_lanes, v.nvlink })
    local a = torch.cuda.gpu_model("A100") -- names are case-insensitive
    assert.are.same({ 108, 19.5e12, 156e12, 312e12, 312e12, 19.5e12, 80 * GIB, 2039e9, 40 * 2 ^ 20, 4 },
      { a.sms, a.peak.fp32, a.peak.tf32_tc, a.peak.fp16_tc, a.peak.bf16_tc, a.peak.fp64_tc, a.memory,
        a.bandwidth, a.l2, a.pcie_gen })
    local t4 = torch.cuda.gpu_model("t4")
    assert.are.same({ 40, 8.1e12, 65e12, 0, 320e9, 0, 7, 5 },
      { t4.sms, t4.peak.fp32, t4.peak.fp16_tc, t4.peak.tf32_tc, t4.bandwidth, t4.nvlink, t4.major, t4.minor })
    local h100, h200 = torch.cuda.gpu_model("h100"), torch.cuda.gpu_model("h200")
    assert.are.same({ 132, 67e12, 494.7e12, 989.4e12, 3.35e12, 50 * 2 ^ 20, 5, 900e9 },
      { h100.sms, h100.peak.fp32, h100.peak.tf32_tc, h100.peak.bf16_tc, h100.bandwidth, h100.l2, h100.pcie_gen,
        h100.nvlink })
    -- the H200 is an H100 with more and faster memory
    assert.are.same({ h100.sms, h100.peak.fp32, h100.peak.fp16_tc }, { h200.sms, h200.peak.fp32, h200.peak.fp16_tc })
    assert.are.same({ 141 * GIB, 4.8e12 }, { h200.memory, h200.bandwidth })
    for _, k in ipairs(torch.cuda.gpu_models()) do
      local m = torch.cuda.gpu_model(k)
      assert.are.same({ 2e-6, 3e-6, 6e-6 }, { m.launch, m.host_launch, m.host_sync })
    end
  end)

  it("an unknown name lists the known ones", function()
    local ok, e = pcall(torch.cuda.gpu_model, "k80")
    assert.is_false(ok)
    assert.matches("unknown GPU model 'k80'; the known ones are t4, v100, a100, h100, h200, or host", e, nil, true)
    ok, e = pcall(T, "v100", "warp", {})
    assert.matches("unknown kind 'warp' (kernel, gemm, gemm_eff, fill, memory or copy)", e, nil, true)
    local out = run("--gpu-model v100,p100 -e 1")
    assert.matches("gshell: --gpu-model: unknown GPU model 'p100'; the known ones are t4, v100, a100, h100, h200, "
      .. "or host (this machine's own time)", out, nil, true)
    assert.matches("exit=1", out, nil, true)
    out = run("--gpu-model -e 1")
    assert.matches("exit=1", out, nil, true)
    out = io.popen("GSHELL_GPU_MODEL=v200 " .. (os.getenv("GSHELL_BUILD") or "build") .. "/gshell -e 1 2>&1; echo \"exit=$?\""):read("a")
    assert.matches("GSHELL_GPU_MODEL: unknown GPU model 'v200'", out, nil, true)
    assert.matches("exit=1", out, nil, true)
  end)

  it("--gpu-model and GSHELL_GPU_MODEL choose per device; host keeps the old device", function()
    local out = run("--sim-gpus 3 --gpu-model a100,host -e \"for i = 0, 2 do print(torch.cuda.get_device_name(i)) end\"")
    assert.are.equal("NVIDIA A100-SXM4-80GB (simulated)\ngshell simulated GPU\ngshell simulated GPU\nexit=0\n", out)
    out = io.popen("GSHELL_GPU_MODEL=h100 " .. (os.getenv("GSHELL_BUILD") or "build")
      .. "/gshell --sim-gpus 1 -e \"print(torch.cuda.get_device_properties(0))\" 2>&1"):read("a")
    assert.are.equal("_CudaDeviceProperties(name='NVIDIA H100 80GB HBM3 (simulated)', major=9, minor=0, "
      .. "total_memory=81920MB, multi_processor_count=132, simulated=True)\n", out)
  end)
end)

describe("the time model", function()
  it("a memory-bound kernel of B bytes takes B / bandwidth + launch", function()
    for _, k in ipairs(torch.cuda.gpu_models()) do
      local m = torch.cuda.gpu_model(k)
      local B = 4 * m.l2 -- beyond L2
      near(B / m.bandwidth + m.launch, T(k, "kernel", { bytes = B, flops = B / 4, elems = B / 8 }))
    end
    -- 1 GB on a V100: 1.111 ms + 2 us, by hand
    near(1e9 / 900e9 + 2e-6, T("v100", "kernel", { bytes = 1e9 }))
    -- a working set inside L2 streams twice as fast
    near(2 ^ 20 / (2 * 900e9) + 2e-6, T("v100", "kernel", { bytes = 2 ^ 20 }))
    -- nothing at all still pays the launch
    near(2e-6, T("h100", "kernel", { bytes = 0 }))
  end)

  it("a compute-bound kernel takes its FLOPs at peak times the SMs' fill (waves and tails)", function()
    -- a V100 runs 80 SMs x (2048 / 256) = 640 blocks of 256 threads at once
    near(1, T("v100", "fill", { blocks = 640 }))
    near(0.5, T("v100", "fill", { blocks = 320 }))   -- half a wave: half the SMs idle
    near(641 / 1280, T("v100", "fill", { blocks = 641 })) -- one block in a second wave: the tail
    near(1 / 640, T("v100", "fill", { blocks = 1 }))
    near(1, T("v100", "fill", { blocks = 6400 }))
    near(0.5, T("t4", "fill", { blocks = 80 }))      -- a T4 holds 1024 threads per SM: 40 x 4 slots
    local flops = 15.7e12 * 1e-3                      -- a millisecond of the V100's FP32 peak
    near(1e-3 + 2e-6, T("v100", "kernel", { flops = flops, bytes = 1024, elems = 640 * 256 }))
    near(2e-3 + 2e-6, T("v100", "kernel", { flops = flops, bytes = 1024, elems = 320 * 256 }))
    -- float64 on the FP64 units: half the V100's FP32 rate
    near(flops / 7.8e12 + 2e-6, T("v100", "kernel", { flops = flops, bytes = 1024, elems = 640 * 256,
      dtype = torch.float64 }))
  end)

  it("a product follows the efficiency curve: worked by hand for one tile", function()
    -- 128 x 64 x 128 on a V100: one tile (1/80 of the SMs), depth 64 / (64 + 64)
    local eff = 0.92 * (1 / 80) * 0.5
    near(eff, T("v100", "gemm_eff", { m = 128, n = 128, k = 64 }))
    near(2e-6 + 2 * 128 * 128 * 64 / (15.7e12 * eff), T("v100", "gemm", { m = 128, n = 128, k = 64 }))
    -- tensor cores: best share 0.80
    near(0.80 * (1 / 80) * 0.5, T("v100", "gemm_eff", { m = 128, n = 128, k = 64, dtype = torch.float16 }))
    -- a batch of 80 such tiles fills the GPU
    near(0.92 * 0.5, T("v100", "gemm_eff", { m = 128, n = 128, k = 64, batch = 80 }))
  end)

  it("a large product approaches but never exceeds peak", function()
    for _, k in ipairs(torch.cuda.gpu_models()) do
      local m = torch.cuda.gpu_model(k)
      local prev = 0
      for _, n in ipairs({ 256, 1024, 4096, 16384 }) do
        local t = T(k, "gemm", { m = n, n = n, k = n })
        local rate = 2 * n ^ 3 / (t - m.launch)
        assert.is_true(rate < m.peak.fp32, k .. " " .. n)
        assert.is_true(rate > prev, k .. " " .. n)
        prev = rate
      end
      assert.is_true(prev > 0.9 * m.peak.fp32, k)
    end
  end)

  it("float32 products use TF32 tensor cores only with allow_tf32, and only where the model has them", function()
    local was = torch.backends.cuda.matmul.allow_tf32
    -- devices with TF32 here, so switching it says nothing (the next case checks the explanation)
    local spec = torch.cuda._set_gpu_model("a100")
    finally(function()
      torch.backends.cuda.matmul.allow_tf32 = was
      torch.cuda._set_gpu_model(spec)
    end)
    assert.is_false(was) -- PyTorch's default
    local args = { m = 8192, n = 8192, k = 8192 }
    local eff32 = T("a100", "gemm_eff", args)
    local fp32 = T("a100", "gemm", args)
    torch.backends.cuda.matmul.allow_tf32 = true
    assert.is_true(torch.backends.cuda.matmul.allow_tf32)
    local efftc = T("a100", "gemm_eff", args)
    near(2 * 8192 ^ 3 / (156e12 * efftc) + 2e-6, T("a100", "gemm", args))
    near(eff32 * 0.80 / 0.92, efftc)
    assert.is_true(fp32 / T("a100", "gemm", args) > 5)
    -- a V100 has no TF32: the product stays on its CUDA cores
    torch.backends.cuda.matmul.allow_tf32 = false
    local v = T("v100", "gemm", args)
    torch.backends.cuda.matmul.allow_tf32 = true
    near(v, T("v100", "gemm", args))
    -- bfloat16 on a V100 (no BF16 units): the FP32 rate; float64 on an A100: its FP64 tensor cores
    near(2 * 8192 ^ 3 / (15.7e12 * T("v100", "gemm_eff", args)) + 2e-6,
      T("v100", "gemm", { m = 8192, n = 8192, k = 8192, dtype = torch.bfloat16 }))
    near(2 * 8192 ^ 3 / (19.5e12 * efftc) + 2e-6, T("a100", "gemm", { m = 8192, n = 8192, k = 8192,
      dtype = torch.float64 }))
    local ok, e = pcall(function() torch.backends.cuda.matmul.allow_tf32 = "yes" end)
    assert.is_false(ok)
    assert.matches("allow_tf32 wants true or false, got", e, nil, true)
  end)

  it("allow_tf32 on a model without TF32 is explained, not ignored", function()
    local out = run("--sim-gpus 2 --gpu-model v100,a100 -e \"torch.backends.cuda.matmul.allow_tf32 = true\"")
    assert.are.equal("torch.backends.cuda.matmul.allow_tf32: cuda:0 models a Tesla V100-SXM2-16GB (Volta), which "
      .. "has no TF32 tensor cores (they came with Ampere); its float32 products stay on the FP32 CUDA cores "
      .. "(15.7 TFLOP/s)\nexit=0\n", out)
    -- nothing to explain where every device has them
    assert.are.equal("exit=0\n", run("--sim-gpus 2 --gpu-model a100 -e \"torch.backends.cuda.matmul.allow_tf32 = true\""))
  end)

  it("copies: PCIe for the host (pinned faster than pageable), NVLink between GPUs that have it", function()
    -- a pinned GiB on a PCIe 3 model: about 1 GiB / 12 GB/s
    local t = T("v100", "copy", { bytes = GIB, pinned = true })
    assert.is_true(math.abs(t - GIB / 12e9) < 0.03 * GIB / 12e9, t)
    near(10e-6 + GIB / (8e9 * 128 / 130 / 8 * 16 * 0.78), t)
    near(t, T("v100", "copy", { bytes = GIB, pinned = true, to = "host" }))
    near(10e-6 + 2 * (t - 10e-6), T("v100", "copy", { bytes = GIB }))     -- pageable: half the rate
    near(10e-6 + (t - 10e-6) / 4, T("h100", "copy", { bytes = GIB, pinned = true })) -- PCIe 5: 4x gen 3
    -- between two V100s over NVLink: half of 300 GB/s, x 0.8
    near(10e-6 + GIB / (150e9 * 0.8), T("v100", "copy", { bytes = GIB, to = "v100" }))
    near(10e-6 + GIB / (300e9 * 0.8), T("a100", "copy", { bytes = GIB, to = "h100" })) -- the slower link
    -- a T4 has no NVLink: PCIe at the pinned rate
    near(t, T("v100", "copy", { bytes = GIB, to = "t4" }))
  end)
end)
