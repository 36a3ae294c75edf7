-- torch/backends_cpu.lua: torch.backends.cpu (issue 32). gshell's
-- hand-written CPU kernels (elementwise, reductions, convolutions' data
-- movement and Winograd transforms, pooling, resizing, batch norm) are
-- compiled for three instruction sets and run the best one this CPU
-- has (src/backend/cpu/cpu_isa.h). get_cpu_capability() names the one in
-- use as PyTorch does ("DEFAULT", "AVX2", "AVX512"); GSHELL_CPU_ISA=
-- baseline|avx2|avx512 picks one at start-up, set_cpu_capability (not in
-- PyTorch) switches at run time, e.g. to time each one. Every one gives
-- the same results, bit for bit. Products and convolutions' products go
-- to OpenBLAS, which picks its own kernels.
local torch = require("torch")

local M = {}

function M.get_cpu_capability()
  return torch._cpu_capability()
end

-- the best instruction set this CPU runs (gshell's addition)
function M.max_cpu_capability()
  return torch._cpu_capability_max()
end

function M.set_cpu_capability(name)
  if type(name) ~= "string" then
    error("torch.backends.cpu.set_cpu_capability wants \"default\", \"avx2\" or \"avx512\", got "
      .. require("torch.utils.errors").describe(name), 2)
  end
  local ok, err = pcall(torch._set_cpu_capability, name)
  if not ok then error(err, 2) end
end

return M
