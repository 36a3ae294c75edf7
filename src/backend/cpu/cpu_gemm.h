/* cpu_gemm.h: the CPU's batched matrix products through OpenBLAS (cpu_gemm.c). */
#ifndef CPU_GEMM_H
#define CPU_GEMM_H

#include "core/gs_backend.h"

gs_status gs_cpu_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b);
/* Test-only: the largest size one BLAS call is given (default and
 * ceiling 2^31 - 1, BLAS's int); products past it are cut into calls. */
void gs_cpu_gemm_set_blas_limit(int64_t limit);
/* Test-only: one BLAS call with a bad leading dimension through the
 * engine's wrapper; the argument number BLAS refused (0: not noticed). */
int gs_cpu_gemm_refusal_selftest(void);

#endif
