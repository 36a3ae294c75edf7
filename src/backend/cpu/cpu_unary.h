/* cpu_unary.h: the CPU's elementwise unary kernels (cpu_unary.c). */
#ifndef CPU_UNARY_H
#define CPU_UNARY_H

#include "core/gs_backend.h"

gs_status gs_cpu_unary(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args);

#endif
