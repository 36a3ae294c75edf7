/* sim_prof.c: what the profiler records of a task on a simulated device
 * that models a GPU (sim_prof.h; issue 29 phase 2). */
#include <string.h>
#include "backend/sim/sim_clock.h"
#include "backend/sim/sim_prof.h"
#include "core/gs_gpu_model.h"
#include "core/gs_prof.h"

/* While a profile records: task t's modelled span, what bound it and its
 * unit, for the worker's event (issue 29; docs/profiling.md). The bound
 * follows the time model's formula, launch + max(compute, memory): a copy
 * engine's task is a copy; a kernel whose launch is longer than its work
 * is launch-bound; else memory-bound when its bytes at the model's
 * bandwidth take the whole of its work's time, compute-bound otherwise. */
void gs_simprof_model(gs_task *t, int id, uint64_t seq) {
  const gs_gpu_model *m = gs_gpu_model_of(t->dev);
  int engine;
  double dur = m ? gs_simclock_task_time(t, &engine) : -1;
  double end = dur >= 0 && t->fused != 2 ? gs_simclock_end(t->dev, id, seq) : -1;
  if (end < 0) { t->m0 = -1; return; }
  t->m0 = end - dur;
  t->m1 = end;
  if (t->fixed_s >= 0) { t->unit = GS_UNIT_FP32 + 1; return; } /* the kernel lab set its bound (issue 30) */
  bool mm = t->fused == 1 || (t->ntensors == 3 && strcmp(t->name, "mm") == 0);
  gs_dtype dt = t->fused == 1 ? t->fz.dtype : t->ntensors > 0 ? t->x[0].dtype : GS_FLOAT32;
  t->unit = (uint8_t)(gs_gpu_unit_for(m, dt, mm) + 1);
  double body = dur - m->launch_s;
  /* a copy inside one device is a kernel that reads and writes the bytes */
  double bytes = t->kind == GS_PROF_COPY ? 2.0 * (double)t->bytes : (double)t->bytes;
  if (engine != 0) { t->bound = GS_BOUND_COPY; t->unit = 0; }
  else if (m->launch_s >= body) t->bound = GS_BOUND_LAUNCH;
  else if (gs_gpu_mem_time(m, bytes) >= body * (1 - 1e-9)) t->bound = GS_BOUND_MEMORY;
  else t->bound = GS_BOUND_COMPUTE;
  if (t->kind == GS_PROF_COPY) t->unit = 0;
}


void gs_simprof_record(const gs_task *t, int stream, uint64_t t0, uint64_t t1) {
  if (t->fused == 2) return; /* part of the modelled kernel another task's row shows */
  gs_prof_event e = {t->name, (gs_prof_kind)t->kind, GS_CUDA, t->dev, stream, t0, t1, t->bytes, t->flops, 0, 0, 0};
  if (t->m0 >= 0) { /* a modelled device: the task's modelled span (issue 29) */
    e.t0_ns = (uint64_t)(t->m0 * 1e9 + 0.5);
    e.t1_ns = (uint64_t)(t->m1 * 1e9 + 0.5);
    e.modelled = 1;
    e.bound = t->bound;
    e.unit = t->unit;
  }
  gs_prof_record(&e);
}
