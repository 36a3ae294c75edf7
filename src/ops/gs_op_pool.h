/* gs_op_pool.h: the engine's convolutional-network helpers of issue 20:
 * 2-d pooling (gs_op_pool.c), batch normalisation (gs_op_norm.c), resizing
 * and constant padding (gs_op_resize.c). Each validates its input once,
 * with PyTorch's messages, casts float16/bfloat16 through float32, and
 * runs its backend's slots (gs_backend.h). Images are NCHW; a 3-d CHW
 * input is one image. The *_backward functions are what autograd calls. */
#ifndef GS_OP_POOL_H
#define GS_OP_POOL_H

#include "ops/gs_ops.h"

/* What the user asked for. MAX/AVG: kernel, stride (> 0), padding and
 * dilation per axis, ceil_mode, count_include_pad (AVG). ADAPTIVE_*: the
 * output size oh, ow only. */
typedef struct {
  int kind; /* gs_pool_kind */
  int kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode, count_include_pad;
  int64_t oh, ow;
} gs_pool2d_opts;

/* out = pool of x; for the MAX kinds *argmax (may be NULL when not
 * wanted) receives PyTorch's indices (int64, out's shape, row * w + col
 * within the plane). *geom (may be NULL) receives the geometry the
 * backward pass needs. */
gs_status gs_pool2d(const gs_tensor *x, const gs_pool2d_opts *o, gs_tensor **out, gs_tensor **argmax,
                    gs_pool2d_params *geom);
/* gx (x's shape xshape, dtype dt) from gy (out's shape) and, for the MAX
 * kinds, the argmax gs_pool2d gave. */
gs_status gs_pool2d_backward(const gs_pool2d_params *geom, const gs_tensor *gy, const gs_tensor *argmax, int xndim,
                             const int64_t *xshape, gs_dtype dt, gs_tensor **gx);

/* Batch normalisation of x [N, C, ...] (2 to 5 dims) with PyTorch's
 * semantics. training: batch statistics normalise (biased variance) and
 * the running statistics, when given, are updated in place:
 * running = (1 - momentum) * running + momentum * stat, with the unbiased
 * variance. Otherwise the running statistics (required) normalise.
 * weight, bias, running_* may be NULL. *saved (may be NULL) receives a
 * [2, C] tensor in x's compute dtype: the mean and 1/sqrt(var + eps) that
 * were used, for gs_batch_norm_backward. */
gs_status gs_batch_norm(const gs_tensor *x, gs_tensor *running_mean, gs_tensor *running_var, const gs_tensor *weight,
                        const gs_tensor *bias, bool training, double momentum, double eps, gs_tensor **out,
                        gs_tensor **saved);
/* Gradients for x, weight and bias (each pointer may be NULL when not
 * wanted); training says whether the statistics came from x (their own
 * gradient then flows into gx) or were constants. */
gs_status gs_batch_norm_backward(const gs_tensor *gy, const gs_tensor *x, const gs_tensor *saved,
                                 const gs_tensor *weight, bool training, gs_tensor **gx, gs_tensor **gw,
                                 gs_tensor **gb);

/* Resizes the last two dims of a 4-d x to oh x ow. scale_h/scale_w: the
 * user's scale_factor (0 when a size was given), which PyTorch uses for
 * the source step. align_corners only with BILINEAR. *geom may be NULL. */
gs_status gs_interpolate(const gs_tensor *x, int mode, bool align_corners, int64_t oh, int64_t ow, double scale_h,
                         double scale_w, gs_tensor **out, gs_resize_params *geom);
gs_status gs_interpolate_backward(const gs_resize_params *geom, const gs_tensor *gy, int xndim,
                                  const int64_t *xshape, gs_dtype dt, gs_tensor **gx);

/* Constant padding: pads (npads even, at most 2 * ndim) in PyTorch's order,
 * last dim first (left, right, then top, bottom, ...); negative pads crop. */
gs_status gs_pad(const gs_tensor *x, int npads, const int64_t *pads, gs_scalar value, gs_tensor **out);

#endif
