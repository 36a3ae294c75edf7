-- gshell.sim_speed: what the learner is told about the speed of simulated
-- GPUs, in one place (the lesson banner and the lenet lesson's last step
-- use it). True for today's simulated devices: they compute with this
-- machine's CPU cores on their own thread, and take no modelled time.
-- When simulated devices model a real GPU's time, change the words here.
local M = {}

-- The lesson banner's sentence (after "backed by host memory.").
M.banner = "They behave like GPUs (separate memories, copies, errors) and compute with this machine's CPU " ..
  "cores, so the work itself is no faster; a training loop may still end sooner on one, because the host " ..
  "loads the next batch while the simulated GPU computes."

-- The lenet lesson's "CPU against the GPU" step.
M.compare = [[
Simulated GPUs compute with this machine's CPU cores, on their own
thread. On the CPU the host does everything in turn: load a batch,
compute, load the next. On a simulated GPU the host only queues the
work, so it loads the next batch while the device computes the last one:
the two overlap, and the GPU's epoch can take about half the time. That
is the overlap, not a faster chip. On a real GPU LeNet's convolutions
themselves run many times faster than on a CPU, and every wait leaves the
GPU idle while the host catches up.]]

return M
