/* cpu_iter.h: runs a 1-d inner loop over every element of up to four
 * same-shaped operands (inputs may carry stride 0 where broadcast). Dims
 * are coalesced where the memory allows, so a contiguous tensor is one
 * call of the inner loop per thread. */
#ifndef CPU_ITER_H
#define CPU_ITER_H
#include "core/gs_tensor.h"

/* Below this many elements a kernel runs on one thread: the pool's
 * workers sleep between jobs, and waking one costs more than it saves
 * on smaller ops (measured on the MLP step: 451 -> 593 steps/s). */
#define GS_PARALLEL_GRAIN 131072

#define GS_ITER_MAX_OPS 4

/* data[k] points at operand k's first element of the run; strides[k] is
 * its step in bytes; n elements. ctx is passed through. */
typedef void (*gs_loop_fn)(char **data, const int64_t *strides, int64_t n, void *ctx);

/* ops[0] gives the shape; all operands must have it. Parallel above
 * GS_PARALLEL_GRAIN elements unless serial is set; above it, too, Ctrl-C
 * stops the loop between blocks (gs_interrupted_error(), see gs_common.h). */
gs_status gs_cpu_foreach(int nops, const gs_tensor *const *ops, gs_loop_fn fn, void *ctx, bool serial);

#endif
