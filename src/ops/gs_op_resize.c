/* gs_op_resize.c: interpolate (nearest and bilinear resizing of the last
 * two dims) through the backend's resize slots, and constant padding,
 * which needs no kernel: a filled tensor and a copy into a narrowed view
 * of it (negative pads narrow the input instead). */
#include <stdio.h>
#include <string.h>
#include "ops/gs_op_pool.h"

#define REL(t) gs_tensor_release(t)

static const char *mode_name(int mode) { return mode == GS_RESIZE_NEAREST ? "upsample_nearest2d" : "upsample_bilinear2d"; }

gs_status gs_interpolate(const gs_tensor *x, int mode, bool align_corners, int64_t oh, int64_t ow, double scale_h,
                         double scale_w, gs_tensor **out, gs_resize_params *geom) {
  if (mode != GS_RESIZE_NEAREST && mode != GS_RESIZE_BILINEAR) return gs_error("interpolate: unknown mode %d", mode);
  if (x->ndim != 4)
    return gs_error("interpolate: expected a 4-d input (N, C, H, W) for mode '%s', got a %d-d tensor",
                    mode == GS_RESIZE_NEAREST ? "nearest" : "bilinear", x->ndim);
  if (!gs_dtype_is_float(x->dtype))
    return gs_error("\"%s\" not implemented for '%s'", mode_name(mode), gs_dtype_torch_name(x->dtype));
  int64_t h = x->shape[2], w = x->shape[3];
  if (h <= 0 || w <= 0 || oh <= 0 || ow <= 0)
    return gs_error("Input and output sizes should be greater than 0, but got input (H: %lld, W: %lld) output (H: %lld, "
                    "W: %lld)", (long long)h, (long long)w, (long long)oh, (long long)ow);
  gs_resize_params p = {mode, mode == GS_RESIZE_BILINEAR && align_corners, x->shape[0] * x->shape[1], h, w, oh, ow,
                        scale_h > 0 ? scale_h : 0, scale_w > 0 ? scale_w : 0};
  const gs_backend *be;
  GS_DISPATCH(be, x, resize, mode_name(mode));
  gs_dtype cdt = gs_compute_dtype(x->dtype);
  int64_t shape[4] = {x->shape[0], x->shape[1], oh, ow};
  gs_tensor *xc = NULL, *xk = NULL, *y = NULL, *r = NULL;
  gs_status s = gs_cast(x, cdt, &xc);
  if (s == GS_OK) s = gs_contiguous(xc, &xk);
  if (s == GS_OK) s = gs_tensor_empty(gs_tensor_device(x), cdt, 4, shape, &y);
  if (s == GS_OK && p.planes > 0) {
    gs_log_op(mode_name(mode), x);
    s = be->resize(&p, y, xk);
  }
  if (s == GS_OK) s = gs_cast(y, x->dtype, &r);
  REL(xc); REL(xk); REL(y);
  if (s != GS_OK) return s;
  *out = r;
  if (geom) *geom = p;
  return GS_OK;
}

gs_status gs_interpolate_backward(const gs_resize_params *geom, const gs_tensor *gy, int xndim,
                                  const int64_t *xshape, gs_dtype dt, gs_tensor **gx) {
  const gs_backend *be;
  GS_DISPATCH(be, gy, resize_backward, "upsample_backward");
  gs_dtype cdt = gs_compute_dtype(dt);
  gs_tensor *gc = NULL, *gk = NULL, *g = NULL, *r = NULL;
  gs_status s = gs_cast(gy, cdt, &gc);
  if (s == GS_OK) s = gs_contiguous(gc, &gk);
  if (s == GS_OK) s = gs_tensor_empty(gs_tensor_device(gy), cdt, xndim, xshape, &g);
  if (s == GS_OK && geom->planes > 0) s = be->resize_backward(geom, g, gk);
  if (s == GS_OK) s = gs_cast(g, dt, &r);
  REL(gc); REL(gk); REL(g);
  if (s == GS_OK) *gx = r;
  return s;
}

gs_status gs_pad(const gs_tensor *x, int npads, const int64_t *pads, gs_scalar value, gs_tensor **out) {
  if (npads % 2 != 0) return gs_error("Padding length must be divisible by 2");
  if (npads / 2 > x->ndim) return gs_error("Padding length too large");
  /* as torch.full: an int8 pad of 300 wrapped to 44, NaN into int32 gave 0 */
  if (gs_scalar_fits(x->dtype, value) != GS_OK) {
    char why[160];
    snprintf(why, sizeof why, "%s", gs_last_error());
    return gs_error("pad: %s", why);
  }
  int64_t shape[GS_MAX_DIMS], lo[GS_MAX_DIMS] = {0}, hi[GS_MAX_DIMS] = {0};
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  for (int i = 0; i < npads / 2; i++) {
    int d = x->ndim - 1 - i;
    lo[d] = pads[2 * i];
    hi[d] = pads[2 * i + 1];
    int64_t n;
    if (__builtin_add_overflow(x->shape[d], lo[d], &n) || __builtin_add_overflow(n, hi[d], &n))
      return gs_error("pad: the input size %lld plus padding %lld and %lld on dimension %d does not fit in 64 bits",
                      (long long)x->shape[d], (long long)lo[d], (long long)hi[d], d + 1);
    if (n < 0)
      return gs_error("The input size %lld, plus negative padding %lld and %lld resulted in a negative output size, "
                      "which is invalid. Check dimension %d of your input.", (long long)x->shape[d], (long long)lo[d],
                      (long long)hi[d], d + 1);
    shape[d] = n;
  }
  gs_tensor *y = NULL;
  GS_TRY(gs_full(gs_tensor_device(x), x->dtype, x->ndim, shape, value, &y));
  /* the part of x that survives the crops, and where it lands in y */
  gs_tensor *src = (gs_tensor *)x, *dst = y;
  gs_tensor_retain(src);
  gs_tensor_retain(dst);
  gs_status s = GS_OK;
  bool empty = false;
  for (int d = 0; d < x->ndim && s == GS_OK; d++) {
    if (lo[d] == 0 && hi[d] == 0) continue;
    int64_t len = x->shape[d] + (lo[d] < 0 ? lo[d] : 0) + (hi[d] < 0 ? hi[d] : 0);
    if (len <= 0) { empty = true; break; }
    gs_tensor *a = NULL, *b = NULL;
    s = gs_narrow(src, d, lo[d] < 0 ? -lo[d] : 0, len, &a);
    if (s == GS_OK) s = gs_narrow(dst, d, lo[d] > 0 ? lo[d] : 0, len, &b);
    REL(src); REL(dst);
    src = a; dst = b;
  }
  if (s == GS_OK && !empty && gs_numel(src) > 0) s = gs_copy_(dst, src);
  REL(src); REL(dst);
  if (s != GS_OK) { REL(y); return s; }
  *out = y;
  return GS_OK;
}
