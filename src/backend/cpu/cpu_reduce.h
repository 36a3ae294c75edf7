/* cpu_reduce.h: the CPU's reductions and softmax (cpu_reduce.c). */
#ifndef CPU_REDUCE_H
#define CPU_REDUCE_H

#include "core/gs_backend.h"

gs_status gs_cpu_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim);
gs_status gs_cpu_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log);

#endif
