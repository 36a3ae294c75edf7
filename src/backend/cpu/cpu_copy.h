/* cpu_copy.h: the CPU's copies between layouts and dtypes, fills, arange and
 * checked gathers (cpu_copy.c). Contracts: the slots of core/gs_backend.h. */
#ifndef CPU_COPY_H
#define CPU_COPY_H

#include "core/gs_backend.h"
#include "core/gs_devflag.h"

gs_status gs_cpu_copy(gs_tensor *dst, const gs_tensor *src);
gs_status gs_cpu_fill(gs_tensor *dst, gs_scalar value);
gs_status gs_cpu_arange(gs_tensor *dst, double start, double step);
gs_status gs_cpu_index_select(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx);
/* the index_add slot (gs_backend.h), cpu_index_add.c */
gs_status gs_cpu_index_add(gs_tensor *out, int dim, const gs_tensor *idx, const gs_tensor *src);
gs_status gs_cpu_check_index(const gs_tensor *idx, int64_t size, int code);
/* For a device that reports errors in the data later (simulated GPUs,
 * core/gs_devflag.h): with flag non-NULL an index out of range is recorded
 * there and the kernel returns GS_OK (index_select's output is then
 * zeros); with NULL it is an error at once, as the plain versions. */
gs_status gs_cpu_index_select_flagged(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx,
                                      gs_devflag *flag);
gs_status gs_cpu_check_index_flagged(const gs_tensor *idx, int64_t size, int code, gs_devflag *flag);

#endif
