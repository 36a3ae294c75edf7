-- torch/backends.lua: torch.backends.cuda.matmul.allow_tf32 (issue 29).
-- PyTorch's switch for float32 matrix products on TF32 tensor cores,
-- false by default as in PyTorch. On simulated devices the time model
-- reads it (src/core/gs_gpu_model.c): with it on, a float32 product on a
-- model with TF32 tensor cores (A100, H100, H200) is timed at their rate.
-- Setting it on a model without them (T4, V100) is explained, not ignored.
-- Values are computed in float32 either way: only the modelled time changes.
local torch = require("torch")

local M = { cuda = {} }

-- the simulated devices whose model has no TF32 tensor cores, one line each
local function explain_missing_tf32()
  if not torch.cuda.is_simulated() then return end
  local seen = {}
  for i = 0, torch.cuda.device_count() - 1 do
    local m = torch.cuda.gpu_model(i)
    if m and m.peak.tf32_tc == 0 and not seen[m.key] then
      seen[m.key] = true
      io.stderr:write(string.format(
        "torch.backends.cuda.matmul.allow_tf32: cuda:%d models %s (%s), which has no TF32 tensor cores "
          .. "(they came with Ampere); its float32 products stay on the FP32 CUDA cores (%.1f TFLOP/s)\n",
        i, m.a_name, m.arch, m.peak.fp32 / 1e12))
    end
  end
end

M.cuda.matmul = setmetatable({}, {
  __index = function(_, k)
    if k == "allow_tf32" then return torch._allow_tf32() end
  end,
  __newindex = function(t, k, v)
    if k ~= "allow_tf32" then
      rawset(t, k, v)
      return
    end
    if type(v) ~= "boolean" then
      error("torch.backends.cuda.matmul.allow_tf32 wants true or false, got "
        .. require("torch.utils.errors").describe(v), 2)
    end
    torch._set_allow_tf32(v)
    if v then explain_missing_tf32() end
  end,
})

-- torch.backends.cpu: which instruction set the CPU kernels use (issue 32)
M.cpu = require("torch.backends_cpu")

return M
