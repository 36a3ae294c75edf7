/* cpu_pool.h: the CPU's 2-d pooling and resizing, forward and backward
 * (cpu_pool.c; issue 20). Contracts in core/gs_backend.h. */
#ifndef CPU_POOL_H
#define CPU_POOL_H

#include "core/gs_backend.h"

gs_status gs_cpu_pool2d(const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax, const gs_tensor *x);
gs_status gs_cpu_pool2d_backward(const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                                 const gs_tensor *argmax);
gs_status gs_cpu_resize(const gs_resize_params *p, gs_tensor *out, const gs_tensor *x);
gs_status gs_cpu_resize_backward(const gs_resize_params *p, gs_tensor *gx, const gs_tensor *gy);

#endif
