/* cpu_binary.h: the CPU's elementwise binary kernels (cpu_binary.c). */
#ifndef CPU_BINARY_H
#define CPU_BINARY_H

#include "core/gs_backend.h"
#include "core/gs_devflag.h"

gs_status gs_cpu_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b);
/* With flag non-NULL an integer division by zero is recorded there and the
 * kernel returns GS_OK (simulated GPUs report it later, core/gs_devflag.h);
 * with NULL it is an error at once, as gs_cpu_binary. */
gs_status gs_cpu_binary_flagged(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b,
                                gs_devflag *flag);

#endif
