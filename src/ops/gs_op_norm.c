/* gs_op_norm.c: batch normalisation, forward and backward. The per-channel
 * work over the whole input (statistics, sums, the affine map) runs in the
 * backend's bn_* slots; the small [C] vectors in between (1/sqrt(var+eps),
 * scales, the running-statistics update) are ordinary tensor ops, so every
 * device computes them the same way. */
#include <stdio.h>
#include <string.h>
#include "ops/gs_op_pool.h"

#define REL(t) gs_tensor_release(t)

/* A per-channel argument: C elements on x's device. */
static gs_status check_channel_arg(const gs_tensor *x, const gs_tensor *v, const char *what, int64_t c) {
  if (!v) return GS_OK;
  if (gs_numel(v) != c) return gs_error("%s should contain %lld elements not %lld", what, (long long)c, (long long)gs_numel(v));
  gs_device dx = gs_tensor_device(x), dv = gs_tensor_device(v);
  if (!gs_device_equal(dx, dv)) {
    char nx[24], nv[24];
    gs_device_name(dx, nx, sizeof nx);
    gs_device_name(dv, nv, sizeof nv);
    return gs_error("Expected all tensors to be on the same device, but found at least two devices, %s and %s! "
                    "(batch_norm's %s is on %s, its input on %s)", dx.type == GS_CPU ? nv : nx, dx.type == GS_CPU ? nx : nv,
                    what, nv, nx);
  }
  if (!gs_dtype_is_float(v->dtype))
    return gs_error("batch_norm: %s must be a floating point tensor, got %s", what, gs_dtype_name(v->dtype));
  return GS_OK;
}

/* v as a contiguous [C] tensor of dtype dt (zeros when v is NULL, ones when
 * v is NULL and one is set). */
static gs_status channel_vec(const gs_tensor *x, const gs_tensor *v, gs_dtype dt, int64_t c, double dflt,
                             gs_tensor **out) {
  if (!v) return gs_full(gs_tensor_device(x), dt, 1, &c, gs_scalar_f(dflt), out);
  gs_tensor *t = NULL, *r = NULL;
  gs_status s = gs_cast(v, dt, &t);
  if (s == GS_OK) s = gs_reshape(t, 1, &c, &r);
  REL(t);
  if (s == GS_OK) { s = gs_contiguous(r, out); REL(r); }
  return s;
}

/* k [4, C] from its four rows */
static gs_status stack4(gs_tensor *a, gs_tensor *b, gs_tensor *c, gs_tensor *d, gs_tensor **out) {
  gs_tensor *xs[4] = {a, b, c, d};
  return gs_stack(xs, 4, 0, out);
}

/* running = (1 - m) * running + m * stat, in place in running's dtype */
static gs_status update_running(gs_tensor *running, const gs_tensor *stat, double m, double factor) {
  gs_tensor *t = NULL;
  gs_status s = gs_binary_scalar(GS_B_MUL, stat, gs_scalar_f(m * factor), false, &t);
  gs_tensor *tv = NULL;
  int64_t shape[GS_MAX_DIMS];
  memcpy(shape, running->shape, sizeof(int64_t) * (size_t)running->ndim);
  if (s == GS_OK) s = gs_reshape(t, running->ndim, shape, &tv);
  if (s == GS_OK) s = gs_binary_scalar_(GS_B_MUL, running, gs_scalar_f(1 - m));
  if (s == GS_OK) s = gs_binary_(GS_B_ADD, running, tv);
  REL(t); REL(tv);
  return s;
}

gs_status gs_batch_norm(const gs_tensor *x, gs_tensor *running_mean, gs_tensor *running_var, const gs_tensor *weight,
                        const gs_tensor *bias, bool training, double momentum, double eps, gs_tensor **out,
                        gs_tensor **saved) {
  if (x->ndim < 2)
    return gs_error("batch_norm: expected an input of at least 2 dims (N, C, ...), got a %d-d tensor", x->ndim);
  if (!gs_dtype_is_float(x->dtype))
    return gs_error("\"batch_norm\" not implemented for '%s'", gs_dtype_torch_name(x->dtype));
  int64_t c = x->shape[1], n = gs_numel(x) / (c ? c : 1);
  GS_TRY(check_channel_arg(x, running_mean, "running_mean", c));
  GS_TRY(check_channel_arg(x, running_var, "running_var", c));
  GS_TRY(check_channel_arg(x, weight, "weight", c));
  GS_TRY(check_channel_arg(x, bias, "bias", c));
  if (!training && (!running_mean || !running_var))
    return gs_error("%s must be defined in evaluation mode", running_mean ? "running_var" : "running_mean");
  if (training && n <= 1) {
    char shp[256];
    gs_shape_str(x, shp, sizeof shp);
    return gs_error("Expected more than 1 value per channel when training, got input size torch.Size(%s)", shp);
  }
  if (training && running_mean) GS_TRY(gs_check_writable(running_mean));
  if (training && running_var) GS_TRY(gs_check_writable(running_var));
  const gs_backend *be;
  GS_DISPATCH(be, x, bn_elemt, "batch_norm");
  if (training && !be->bn_stats) return gs_no_kernel("batch_norm", x);
  gs_dtype cdt = gs_compute_dtype(x->dtype);
  gs_device dev = gs_tensor_device(x);
  int64_t two_c[2] = {2, c};
  gs_tensor *xc = NULL, *xk = NULL, *stats = NULL, *mean = NULL, *var = NULL, *ve = NULL, *invstd = NULL;
  gs_tensor *w = NULL, *b = NULL, *scale = NULL, *zero = NULL, *k = NULL, *y = NULL, *r = NULL, *sv = NULL;
  gs_status s = gs_cast(x, cdt, &xc);
  if (s == GS_OK) s = gs_contiguous(xc, &xk);
  if (s == GS_OK && gs_numel(x) == 0) {
    /* nothing to normalise (N = 0): PyTorch returns an empty result */
    s = gs_clone(x, out);
    REL(xc); REL(xk);
    if (s == GS_OK && saved) { s = gs_full(dev, cdt, 2, two_c, gs_scalar_f(0), saved); if (s != GS_OK) REL(*out); }
    return s;
  }
  gs_log_op("batch_norm", x);
  if (training) {
    if (s == GS_OK) s = gs_tensor_empty(dev, cdt, 2, two_c, &stats);
    if (s == GS_OK) s = be->bn_stats(stats, xk);
    if (s == GS_OK) s = gs_select(stats, 0, 0, &mean);
    if (s == GS_OK) s = gs_select(stats, 0, 1, &var);
  } else {
    if (s == GS_OK) s = channel_vec(x, running_mean, cdt, c, 0, &mean);
    if (s == GS_OK) s = channel_vec(x, running_var, cdt, c, 0, &var);
  }
  if (s == GS_OK) s = gs_binary_scalar(GS_B_ADD, var, gs_scalar_f(eps), false, &ve);
  if (s == GS_OK) s = gs_unary(GS_U_RSQRT, ve, NULL, &invstd);
  if (s == GS_OK) s = channel_vec(x, weight, cdt, c, 1, &w);
  if (s == GS_OK) s = channel_vec(x, bias, cdt, c, 0, &b);
  if (s == GS_OK) s = gs_binary(GS_B_MUL, w, invstd, &scale);
  if (s == GS_OK) s = gs_full(dev, cdt, 1, &c, gs_scalar_f(0), &zero);
  if (s == GS_OK) s = stack4(zero, scale, mean, b, &k);
  if (s == GS_OK) s = gs_tensor_empty(dev, cdt, x->ndim, x->shape, &y);
  if (s == GS_OK) s = be->bn_elemt(y, NULL, xk, k);
  if (s == GS_OK && saved) {
    gs_tensor *xs[2] = {mean, invstd};
    s = gs_stack(xs, 2, 0, &sv);
  }
  /* the running statistics change only once everything else succeeded */
  if (s == GS_OK && training && running_mean) s = update_running(running_mean, mean, momentum, 1.0);
  if (s == GS_OK && training && running_var)
    s = update_running(running_var, var, momentum, (double)n / (double)(n - 1));
  if (s == GS_OK) s = gs_cast(y, x->dtype, &r);
  gs_tensor *ts[] = {xc, xk, stats, mean, var, ve, invstd, w, b, scale, zero, k, y};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) REL(ts[i]);
  if (s != GS_OK) { REL(sv); REL(r); return s; }
  *out = r;
  if (saved) *saved = sv;
  return GS_OK;
}

gs_status gs_batch_norm_backward(const gs_tensor *gy, const gs_tensor *x, const gs_tensor *saved,
                                 const gs_tensor *weight, bool training, gs_tensor **gx, gs_tensor **gw,
                                 gs_tensor **gb) {
  const gs_backend *be;
  GS_DISPATCH(be, x, bn_reduce, "batch_norm_backward");
  GS_TRY(gs_check_same_device(gy, x));
  gs_dtype cdt = gs_compute_dtype(x->dtype);
  gs_device dev = gs_tensor_device(x);
  int64_t c = x->shape[1], m = gs_numel(x) / (c ? c : 1), two_c[2] = {2, c};
  gs_tensor *gc = NULL, *gk = NULL, *xc = NULL, *xk = NULL, *mean = NULL, *invstd = NULL, *sums = NULL;
  gs_tensor *s1 = NULL, *s2 = NULL, *w = NULL, *wi = NULL, *k0 = NULL, *k1 = NULL, *k2 = NULL, *k3 = NULL;
  gs_tensor *t1 = NULL, *t2 = NULL, *k = NULL, *g = NULL;
  gs_tensor *rx = NULL, *rw = NULL, *rb = NULL;
  gs_status s = gs_cast(gy, cdt, &gc);
  if (s == GS_OK) s = gs_contiguous(gc, &gk);
  if (s == GS_OK) s = gs_cast(x, cdt, &xc);
  if (s == GS_OK) s = gs_contiguous(xc, &xk);
  if (s == GS_OK) s = gs_select(saved, 0, 0, &mean);
  if (s == GS_OK) s = gs_select(saved, 0, 1, &invstd);
  if (s == GS_OK) s = gs_tensor_empty(dev, cdt, 2, two_c, &sums);
  if (s == GS_OK) s = m > 0 ? be->bn_reduce(sums, gk, xk, mean) : gs_fill_(sums, gs_scalar_f(0));
  if (s == GS_OK) s = gs_select(sums, 0, 0, &s1);
  if (s == GS_OK) s = gs_select(sums, 0, 1, &s2);
  if (s == GS_OK && gb) s = gs_clone(s1, &rb);
  if (s == GS_OK && gw) s = gs_binary(GS_B_MUL, s2, invstd, &rw);
  if (s == GS_OK && gx) {
    s = channel_vec(x, weight, cdt, c, 1, &w);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, w, invstd, &wi);
    if (s == GS_OK) { gs_tensor_retain(wi); k0 = wi; }
    if (training) {
      /* gx = wi * (gy - s1/m - (x - mean) * invstd^2 * s2/m) */
      double inv_m = 1.0 / (double)(m > 0 ? m : 1);
      if (s == GS_OK) s = gs_binary(GS_B_MUL, wi, invstd, &t1);
      if (s == GS_OK) s = gs_binary(GS_B_MUL, t1, invstd, &t2);
      REL(t1); t1 = NULL;
      if (s == GS_OK) s = gs_binary(GS_B_MUL, t2, s2, &t1);
      if (s == GS_OK) s = gs_binary_scalar(GS_B_MUL, t1, gs_scalar_f(-inv_m), false, &k1);
      if (s == GS_OK) { gs_tensor_retain(mean); k2 = mean; }
      REL(t1); t1 = NULL;
      if (s == GS_OK) s = gs_binary(GS_B_MUL, wi, s1, &t1);
      if (s == GS_OK) s = gs_binary_scalar(GS_B_MUL, t1, gs_scalar_f(-inv_m), false, &k3);
    } else {
      /* constant statistics: gx = wi * gy */
      if (s == GS_OK) s = gs_full(dev, cdt, 1, &c, gs_scalar_f(0), &k1);
      if (s == GS_OK) { gs_tensor_retain(k1); k2 = k1; gs_tensor_retain(k1); k3 = k1; }
    }
    if (s == GS_OK) s = stack4(k0, k1, k2, k3, &k);
    if (s == GS_OK) s = gs_tensor_empty(dev, cdt, x->ndim, x->shape, &g);
    if (s == GS_OK && m > 0) s = be->bn_elemt(g, gk, xk, k);
    if (s == GS_OK) s = gs_cast(g, x->dtype, &rx);
  }
  gs_tensor *ts[] = {gc, gk, xc, xk, mean, invstd, sums, s1, s2, w, wi, k0, k1, k2, k3, t1, t2, k, g};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) REL(ts[i]);
  if (s != GS_OK) { REL(rx); REL(rw); REL(rb); return s; }
  if (gx) *gx = rx;
  if (gw) *gw = rw;
  if (gb) *gb = rb;
  return GS_OK;
}
