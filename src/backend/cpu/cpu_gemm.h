/* cpu_gemm.h: the CPU's batched matrix products through OpenBLAS (cpu_gemm.c). */
#ifndef CPU_GEMM_H
#define CPU_GEMM_H

#include "core/gs_backend.h"

gs_status gs_cpu_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b);

#endif
