-- torch/kernel_lab_report.lua: a kernel lab launch's report (issue 30;
-- docs/kernel-lab.md, "Counts and time"): the counts of
-- torch/kernel_lab.lua, the occupancy from the block's size, its shared
-- memory and an estimate of registers against the GPU model's limits per
-- SM, and the modelled time: launch + max(compute, memory), memory being
-- the sectors' bytes at the model's bandwidth (gs_gpu_mem_time), compute
-- the estimated instructions at the FP32 lanes' rate plus the shared
-- memory's wavefronts (a warp's access, one more per bank conflict) at
-- one per SM and cycle, both over the share of the SMs the launch keeps
-- busy (its waves of blocks).
local torch = require("torch")

local M = {}
local Report = { __name = "torch.cuda.kernel_report" }
Report.__index = Report

-- Estimates (docs/kernel-lab.md says why): registers per thread, and
-- instructions per thread and per global access (arithmetic is Lua's and
-- cannot be observed, so the compute side is a floor; shared accesses
-- cost their wavefronts).
M.REGISTERS = 32
M.INSTR_THREAD = 8
M.INSTR_ACCESS = 2

local function occupancy(m, threads, smem)
  local warps = (threads + 31) // 32
  local max_warps = m.threads_per_sm // 32
  local limits = {
    { "threads", max_warps // warps },
    { "blocks per SM", m.max_blocks_per_sm },
    { "registers", m.regs_per_sm // (M.REGISTERS * 32 * warps) },
    { "shared memory", smem > 0 and math.floor(m.smem_per_sm / smem) or math.huge },
  }
  local per_sm, by = math.huge, nil
  for _, l in ipairs(limits) do
    if l[2] < per_sm then per_sm, by = l[2], l[1] end
  end
  return per_sm, per_sm * warps / max_warps, by
end

function M.make(name, c, g, b, m)
  local r = setmetatable({ name = name, grid = g, block = b, threads = c.threads,
    global_reads = c.global_reads, global_writes = c.global_writes, shared_reads = c.shared_reads,
    shared_writes = c.shared_writes, sectors = c.sectors, bank_conflicts = c.bank_conflicts, atomics = c.atomics,
    shared_bytes = c.smem, model = m and m.key or nil, _trace = c.trace }, Report)
  if not m then return r end -- "host": the device keeps this machine's time
  local threads = b[1] * b[2] * b[3]
  local per_sm, occ, by = occupancy(m, threads, c.smem)
  r.blocks_per_sm, r.occupancy, r.occupancy_limit = per_sm, occ, by
  local blocks = g[1] * g[2] * g[3]
  local waves = math.ceil(blocks / (per_sm * m.sms))
  -- the share of the SMs busy, averaged over the waves: one resident
  -- block's warps can keep an SM's lanes issuing, so a launch of fewer
  -- blocks than SMs leaves the rest idle
  local fill = math.min(1, blocks / (waves * m.sms))
  local instr = c.threads * M.INSTR_THREAD + (c.global_reads + c.global_writes) * M.INSTR_ACCESS
  local wavefronts = c.shared_groups + c.bank_conflicts
  local compute = instr / (m.peak.fp32 / 2 * fill) + wavefronts / (m.sms * m.boost_mhz * 1e6 * fill)
  local memory = torch.cuda._model_time(m.key, "memory", { bytes = c.sectors * 32 })
  local work = math.max(compute, memory)
  r.waves, r.fill, r.compute_ms, r.memory_ms = waves, fill, compute * 1e3, memory * 1e3
  r.time_ms = (m.launch + work) * 1e3
  r.bound = m.launch >= work and "launch" or (memory >= compute and "memory" or "compute")
  return r
end

-- r:picture(): the first block's threads and what each touched
-- (torch/kernel_lab_picture.lua).
function Report:picture(...)
  if select("#", ...) > 0 then error("picture() takes no arguments: r:picture() draws the launch's first block", 2) end
  return require("torch.kernel_lab_picture").render(self)
end

local codes = { compute = "_LAB_BOUND_COMPUTE", memory = "_LAB_BOUND_MEMORY", launch = "_LAB_BOUND_LAUNCH" }
function M.bound_code(b) return b and torch[codes[b]] or 0 end

local function us(ms) return string.format("%.3g us", ms * 1e3) end
local function d3(v) return string.format("(%d,%d,%d)", v[1], v[2], v[3]) end

function Report:__tostring()
  local lines = {}
  local function row(k, v, note)
    lines[#lines + 1] = string.format("  %-15s %12s%s", k, tostring(v), note and ("   " .. note) or "")
  end
  lines[1] = string.format("%s: grid %s x block %s = %d threads%s", self.name, d3(self.grid), d3(self.block),
    self.threads, self.model and (" on a modelled " .. self.model:upper()) or "")
  row("global_reads", self.global_reads)
  row("global_writes", self.global_writes)
  row("sectors", self.sectors, string.format("32-byte transactions: %d bytes", self.sectors * 32))
  row("shared_reads", self.shared_reads)
  row("shared_writes", self.shared_writes)
  row("bank_conflicts", self.bank_conflicts)
  if self.atomics > 0 then row("atomics", self.atomics) end
  if not self.model then
    lines[#lines + 1] = "  (no time: this device models no GPU; start gshell with --gpu-model v100)"
    return table.concat(lines, "\n")
  end
  row("occupancy", string.format("%d%%", math.floor(self.occupancy * 100 + 0.5)),
    string.format("%d blocks per SM, limited by %s; %d bytes shared per block", self.blocks_per_sm,
      self.occupancy_limit, self.shared_bytes))
  row("time_ms", string.format("%.4g", self.time_ms), string.format("%s-bound: launch %s, memory %s, compute %s",
    self.bound, us(torch.cuda.gpu_model(self.model).launch * 1e3), us(self.memory_ms), us(self.compute_ms)))
  return table.concat(lines, "\n")
end

return M
