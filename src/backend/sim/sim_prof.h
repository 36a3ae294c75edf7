/* sim_prof.h: the profiler's view of a modelled task (issue 29 phase 2,
 * docs/profiling.md "Profiles on a modelled GPU"). While a profile
 * records, gs_task_submit_on asks for each kernel or copy queued on a
 * device that models a GPU: its modelled start and end (what sim_clock.c
 * charged it), what bound it (gs_prof_bound) and the unit that computed
 * it; the worker then records those instead of this machine's times. */
#ifndef SIM_PROF_H
#define SIM_PROF_H

#include <stdint.h>
#include "backend/sim/sim_queue.h"

/* Fills t->m0, m1, bound, unit (m0 = -1 on a device without a model). */
void gs_simprof_model(gs_task *t, int stream, uint64_t seq);
/* Records task t, run on (t->dev, stream) from t0 to t1 on this
 * machine's clock: its modelled span instead where it has one. */
void gs_simprof_record(const gs_task *t, int stream, uint64_t t0, uint64_t t1);

#endif
