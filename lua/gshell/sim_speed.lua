-- gshell.sim_speed: what the learner is told about the speed of simulated
-- GPUs, in one place (the lesson banner and the lenet lesson's last step
-- use it). Simulated devices compute with this machine's CPU cores and,
-- unless the model is "host", report the time a real GPU would take
-- (issue 29, docs/time-model.md).
local M = {}

-- The lesson banner's sentence (after "backed by host memory.").
M.banner = "They behave like GPUs (separate memories, copies, errors) and compute with this machine's CPU " ..
  "cores; the time they report (torch.clock, d2l.Timer, %timeit, events) is modelled on a real GPU, a V100 " ..
  "unless --gpu-model names another (--gpu-model host keeps this machine's own time)."

-- The lenet lesson's "CPU against the GPU" step.
M.compare = [[
Simulated GPUs compute with this machine's CPU cores, but the time they
report is modelled on a real GPU (a V100 unless --gpu-model or
GSHELL_GPU_MODEL names another; docs/time-model.md): d2l.Timer reads the
seconds that GPU would take for the device's work, plus the host's own
real work (Lua, loading batches). On the CPU the host does everything in
turn at this machine's speed. The GPU's epoch is much shorter: LeNet's
convolutions run at the GPU's rate, and the host only queues the
work, so it loads the next batch while the device computes the last one.
With --gpu-model host a simulated GPU keeps this machine's time: it may
still finish first, by that overlap alone.]]

return M
