/* backend_cpu.h: the CPU kernels, shared by the cpu and sim backends
 * (a simulated GPU computes on the host). See gs_backend.h for contracts. */
#ifndef BACKEND_CPU_H
#define BACKEND_CPU_H
#include "core/gs_backend.h"
#include "core/gs_devflag.h"

gs_status gs_cpu_copy(gs_tensor *dst, const gs_tensor *src);
gs_status gs_cpu_fill(gs_tensor *dst, gs_scalar value);
gs_status gs_cpu_unary(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args);
gs_status gs_cpu_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b);
gs_status gs_cpu_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim);
gs_status gs_cpu_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log);
gs_status gs_cpu_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b);
gs_status gs_cpu_arange(gs_tensor *dst, double start, double step);
gs_status gs_cpu_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset);
gs_status gs_cpu_index_select(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx);
gs_status gs_cpu_check_index(const gs_tensor *idx, int64_t size, int code);
/* pooling, batch norm and resizing (issue 20: cpu_pool.c, cpu_norm.c) */
gs_status gs_cpu_pool2d(const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax, const gs_tensor *x);
gs_status gs_cpu_pool2d_backward(const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                                 const gs_tensor *argmax);
gs_status gs_cpu_bn_stats(gs_tensor *stats, const gs_tensor *x);
gs_status gs_cpu_bn_reduce(gs_tensor *sums, const gs_tensor *gy, const gs_tensor *x, const gs_tensor *mean);
gs_status gs_cpu_bn_elemt(gs_tensor *out, const gs_tensor *a, const gs_tensor *x, const gs_tensor *k);
gs_status gs_cpu_resize(const gs_resize_params *p, gs_tensor *out, const gs_tensor *x);
gs_status gs_cpu_resize_backward(const gs_resize_params *p, gs_tensor *gx, const gs_tensor *gy);

/* The same kernels for a device that reports errors in the data later
 * (simulated GPUs, gs_devflag.h): with flag non-NULL, an integer division
 * by zero or an index out of range is recorded there and the kernel
 * returns GS_OK (its output then undefined: zeros for index_select); with
 * NULL it is an error at once, as the plain versions above. */
gs_status gs_cpu_binary_flagged(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b,
                                gs_devflag *flag);
gs_status gs_cpu_index_select_flagged(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx,
                                      gs_devflag *flag);
gs_status gs_cpu_check_index_flagged(const gs_tensor *idx, int64_t size, int code, gs_devflag *flag);

/* Below this many elements a kernel runs on one thread: the pool's
 * workers sleep between jobs, and waking one costs more than it saves
 * on smaller ops (measured on the MLP step: 451 -> 593 steps/s). */
#define GS_PARALLEL_GRAIN 131072

#endif
