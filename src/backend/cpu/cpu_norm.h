/* cpu_norm.h: the CPU's batch-norm kernels (cpu_norm.c; issue 20).
 * Contracts in core/gs_backend.h. */
#ifndef CPU_NORM_H
#define CPU_NORM_H

#include "core/gs_backend.h"

gs_status gs_cpu_bn_stats(gs_tensor *stats, const gs_tensor *x);
gs_status gs_cpu_bn_reduce(gs_tensor *sums, const gs_tensor *gy, const gs_tensor *x, const gs_tensor *mean);
gs_status gs_cpu_bn_elemt(gs_tensor *out, const gs_tensor *a, const gs_tensor *x, const gs_tensor *k);

#endif
