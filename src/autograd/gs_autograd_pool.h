/* gs_autograd_pool.h: the differentiable forms of issue 20's ops
 * (gs_op_pool.h): each runs the engine op and, when grad mode is on and an
 * input requires grad, records a node named as PyTorch's. */
#ifndef GS_AUTOGRAD_POOL_H
#define GS_AUTOGRAD_POOL_H

#include "autograd/gs_autograd.h"
#include "ops/gs_op_pool.h"

/* argmax may be NULL (max kinds only: the indices, which carry no grad) */
gs_status gs_ag_pool2d(gs_tensor *x, const gs_pool2d_opts *o, gs_tensor **out, gs_tensor **argmax);
/* weight, bias, running_* may be NULL; gradients flow to x, weight, bias */
gs_status gs_ag_batch_norm(gs_tensor *x, gs_tensor *running_mean, gs_tensor *running_var, gs_tensor *weight,
                           gs_tensor *bias, bool training, double momentum, double eps, gs_tensor **out);
gs_status gs_ag_interpolate(gs_tensor *x, int mode, bool align_corners, int64_t oh, int64_t ow, double scale_h,
                            double scale_w, gs_tensor **out);
gs_status gs_ag_pad(gs_tensor *x, int npads, const int64_t *pads, gs_scalar value, gs_tensor **out);

#endif
