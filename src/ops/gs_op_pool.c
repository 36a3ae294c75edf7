/* gs_op_pool.c: 2-d max, average and adaptive pooling: PyTorch's checks
 * and output sizes, then the backend's pool2d slots over the N*C planes
 * of a contiguous input in the compute dtype. */
#include <stdio.h>
#include <string.h>
#include "ops/gs_op_pool.h"

static bool is_max(int kind) { return kind == GS_POOL_MAX || kind == GS_POOL_ADAPTIVE_MAX; }

static const char *pool_name(int kind) {
  switch (kind) {
  case GS_POOL_MAX: return "max_pool2d";
  case GS_POOL_AVG: return "avg_pool2d";
  case GS_POOL_ADAPTIVE_MAX: return "adaptive_max_pool2d";
  default: return "adaptive_avg_pool2d";
  }
}

/* PyTorch's pooling_output_shape: floor division, and with ceil_mode the
 * last window must start inside the input or its left padding. */
static int64_t out_size(int64_t in, int k, int pad, int s, int d, bool ceil_mode) {
  int64_t num = in + 2 * (int64_t)pad - (int64_t)d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t q = num >= 0 ? num / s : -((-num + s - 1) / s);
  int64_t out = q + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) out--;
  return out;
}

/* The window arguments of max/avg pooling, as PyTorch checks them. */
static gs_status check_window(const gs_pool2d_opts *o) {
  if (o->kh <= 0 || o->kw <= 0)
    return gs_error("kernel size should be greater than zero, but got kH: %d kW: %d", o->kh, o->kw);
  if (o->sh <= 0 || o->sw <= 0)
    return gs_error("stride should be greater than zero, but got dH: %d dW: %d", o->sh, o->sw);
  if (o->dh <= 0 || o->dw <= 0)
    return gs_error("dilation should be greater than zero, but got dilationH: %d dilationW: %d", o->dh, o->dw);
  if (o->ph < 0 || o->pw < 0) return gs_error("pad must be non-negative, but got pad: %d", o->ph < 0 ? o->ph : o->pw);
  if (o->kind == GS_POOL_MAX) {
    for (int a = 0; a < 2; a++) {
      int k = a ? o->kw : o->kh, p = a ? o->pw : o->ph, d = a ? o->dw : o->dh;
      if (((int64_t)(k - 1) * d + 1) / 2 < p)
        return gs_error("pad should be at most half of effective kernel size, but got pad=%d, kernel_size=%d and "
                        "dilation=%d", p, k, d);
    }
  } else {
    for (int a = 0; a < 2; a++) {
      int k = a ? o->kw : o->kh, p = a ? o->pw : o->ph;
      if (k / 2 < p) return gs_error("pad should be at most half of kernel size, but got pad=%d and kernel_size=%d", p, k);
    }
  }
  return GS_OK;
}

static gs_status check_input(const gs_tensor *x, const gs_pool2d_opts *o) {
  const char *name = pool_name(o->kind);
  char shp[256];
  gs_shape_str(x, shp, sizeof shp);
  if (x->ndim != 3 && x->ndim != 4) {
    switch (o->kind) {
    case GS_POOL_MAX: return gs_error("non-empty 3D or 4D (batch mode) tensor expected for input, but got %s", shp);
    case GS_POOL_AVG:
      return gs_error("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:%s", shp);
    default: return gs_error("%s(): Expected 3D or 4D tensor, but got %s", name, shp);
    }
  }
  for (int d = x->ndim - 3; d < x->ndim; d++)
    if (x->shape[d] == 0)
      return gs_error("%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s "
                      "with dimension %d being empty", name, shp, d);
  if (!gs_dtype_is_float(x->dtype))
    return gs_error("\"%s\" not implemented for '%s'", name, gs_dtype_torch_name(x->dtype));
  return GS_OK;
}

/* The geometry for x and o, checked. */
static gs_status geometry(const gs_tensor *x, const gs_pool2d_opts *o, gs_pool2d_params *p) {
  GS_TRY(check_input(x, o));
  memset(p, 0, sizeof *p);
  p->kind = o->kind;
  p->count_include_pad = o->count_include_pad;
  int64_t c = x->shape[x->ndim - 3];
  p->h = x->shape[x->ndim - 2];
  p->w = x->shape[x->ndim - 1];
  p->planes = c * (x->ndim == 4 ? x->shape[0] : 1);
  if (o->kind == GS_POOL_ADAPTIVE_MAX || o->kind == GS_POOL_ADAPTIVE_AVG) {
    if (o->oh < 0 || o->ow < 0)
      return gs_error("%s: elements of output_size must be greater than or equal to 0 but received {%lld, %lld}",
                      pool_name(o->kind), (long long)o->oh, (long long)o->ow);
    p->oh = o->oh;
    p->ow = o->ow;
    return GS_OK;
  }
  GS_TRY(check_window(o));
  p->kh = o->kh; p->kw = o->kw; p->sh = o->sh; p->sw = o->sw;
  p->ph = o->ph; p->pw = o->pw;
  p->dh = o->kind == GS_POOL_MAX ? o->dh : 1;
  p->dw = o->kind == GS_POOL_MAX ? o->dw : 1;
  p->oh = out_size(p->h, p->kh, p->ph, p->sh, p->dh, o->ceil_mode);
  p->ow = out_size(p->w, p->kw, p->pw, p->sw, p->dw, o->ceil_mode);
  if (p->oh < 1 || p->ow < 1)
    return gs_error("Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output size is too "
                    "small", (long long)c, (long long)p->h, (long long)p->w, (long long)c, (long long)p->oh,
                    (long long)p->ow);
  return GS_OK;
}

gs_status gs_pool2d(const gs_tensor *x, const gs_pool2d_opts *o, gs_tensor **out, gs_tensor **argmax,
                    gs_pool2d_params *geom) {
  gs_pool2d_params p;
  GS_TRY(geometry(x, o, &p));
  const gs_backend *be;
  GS_DISPATCH(be, x, pool2d, pool_name(o->kind));
  gs_dtype cdt = gs_compute_dtype(x->dtype);
  int64_t shape[4];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  shape[x->ndim - 2] = p.oh;
  shape[x->ndim - 1] = p.ow;
  gs_tensor *xc = NULL, *xk = NULL, *y = NULL, *idx = NULL;
  gs_status s = gs_cast(x, cdt, &xc);
  if (s == GS_OK) s = gs_contiguous(xc, &xk);
  if (s == GS_OK) s = gs_tensor_empty(gs_tensor_device(x), cdt, x->ndim, shape, &y);
  if (s == GS_OK && is_max(o->kind)) s = gs_tensor_empty(gs_tensor_device(x), GS_INT64, x->ndim, shape, &idx);
  if (s == GS_OK && gs_numel(y) > 0) {
    gs_log_op(pool_name(o->kind), x);
    s = be->pool2d(&p, y, idx, xk);
  }
  gs_tensor *r = NULL;
  if (s == GS_OK) s = gs_cast(y, x->dtype, &r);
  gs_tensor_release(xc); gs_tensor_release(xk); gs_tensor_release(y);
  if (s != GS_OK) { gs_tensor_release(idx); return s; }
  *out = r;
  if (argmax) *argmax = idx;
  else gs_tensor_release(idx);
  if (geom) *geom = p;
  return GS_OK;
}

gs_status gs_pool2d_backward(const gs_pool2d_params *geom, const gs_tensor *gy, const gs_tensor *argmax, int xndim,
                             const int64_t *xshape, gs_dtype dt, gs_tensor **gx) {
  const gs_backend *be;
  GS_DISPATCH(be, gy, pool2d_backward, "pool2d_backward");
  if (argmax) GS_TRY(gs_check_same_device(gy, argmax));
  gs_dtype cdt = gs_compute_dtype(dt);
  gs_tensor *gc = NULL, *gk = NULL, *ak = NULL, *g = NULL, *r = NULL;
  gs_status s = gs_cast(gy, cdt, &gc);
  if (s == GS_OK) s = gs_contiguous(gc, &gk);
  if (s == GS_OK && argmax) s = gs_contiguous(argmax, &ak);
  if (s == GS_OK) s = gs_tensor_empty(gs_tensor_device(gy), cdt, xndim, xshape, &g);
  if (s == GS_OK && gs_numel(g) > 0) {
    if (geom->oh * geom->ow == 0) s = gs_fill_(g, gs_scalar_f(0));
    else s = be->pool2d_backward(geom, g, gk, ak);
  }
  if (s == GS_OK) s = gs_cast(g, dt, &r);
  gs_tensor_release(gc); gs_tensor_release(gk); gs_tensor_release(ak); gs_tensor_release(g);
  if (s == GS_OK) *gx = r;
  return s;
}
