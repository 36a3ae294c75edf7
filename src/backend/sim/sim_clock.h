/* sim_clock.h: the modelled clocks of simulated devices that model a GPU
 * (core/gs_gpu_model.h; issue 29, docs/time-model.md).
 *
 * Each task queued on a modelled device gets a modelled start and end,
 * worked out on the host when it is queued:
 *   start = max(when the host launched it, the end of its stream's previous
 *               task, when its resource is free)
 *   end   = start + its time (gs_gpu_kernel_time, gs_gpu_gemm_time,
 *               gs_gpu_copy_time)
 * where the resources are the device's SMs (kernels of every stream share
 * them, one after another) and its copy engines (one per direction), so a
 * copy overlaps the kernels as on a real GPU. The host's clock
 * (core/gs_model_clock.h) pays each launch and jumps to a waited-for
 * task's end.
 *
 * Everything here runs on the host thread (sim_queue.c calls it from
 * gs_task_submit_on, the host waits, event records), under one lock. */
#ifndef SIM_CLOCK_H
#define SIM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct gs_task;

/* Forget every device's modelled time (the devices were reconfigured). */
void gs_simclock_reset(void);
/* A task was queued on (dev, stream) as sequence number seq: the host pays
 * the launch and the task gets its modelled end; inside a fused region
 * (gs_gpu_fused_now) the task is marked as carrying it or part of it
 * (t->fused). No-op for a device without a model. */
void gs_simclock_submit(struct gs_task *t, int stream, uint64_t seq);
/* The modelled end of task seq of (dev, stream); <0 when not modelled. */
double gs_simclock_end(int dev, int stream, uint64_t seq);
/* Around a host wait for task seq of (dev, stream): begin returns a token
 * (the real time, 0 for a device without a model), end takes the real
 * time waited out of the host clock and jumps it to the task's modelled
 * end plus the driver's cost of a sync. */
uint64_t gs_simclock_wait_begin(int dev);
void gs_simclock_wait_end(int dev, int stream, uint64_t seq, uint64_t token);
/* A copy to the host that the host thread did itself (the engine copies
 * device memory to the host after waiting), begun at token (from
 * gs_simclock_wait_begin): its real time becomes the modelled copy over
 * PCIe. */
void gs_simclock_host_copy(int dev, uint64_t bytes, bool pinned, uint64_t token);
/* Read-only, for the profiler (issue 29 phase 2): task t's modelled
 * duration on its device's model (<0 for a device without a model) and
 * the resource it occupies (*engine: 0 the SMs, 1 the engine of copies
 * into the device). Computes what gs_simclock_submit charged; changes
 * nothing. */
double gs_simclock_task_time(const struct gs_task *t, int *engine);

#endif
