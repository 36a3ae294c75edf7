/* gs_op_fill.c: filling with one value (fill_, full) and whether a Lua
 * number fits a dtype. The elementwise ops make their 0-d operands with
 * these, and the factories build on the elementwise ops, so this file
 * sits below both. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include "ops/gs_ops.h"

gs_status gs_scalar_fits(gs_dtype dt, gs_scalar v) {
  if (v.is_bool || dt == GS_BOOL) return GS_OK;
  double lo, hi;
  switch (dt) {
  case GS_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
  case GS_UINT8: lo = 0, hi = UINT8_MAX; break;
  case GS_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
  case GS_INT32: lo = INT32_MIN, hi = INT32_MAX; break;
  case GS_INT64: lo = -0x1p63, hi = 0x1p63; break; /* an int64 scalar always fits */
  case GS_FLOAT16: lo = -65504, hi = 65504; break;
  case GS_BFLOAT16: lo = -0x1.fep127, hi = 0x1.fep127; break;
  case GS_FLOAT32: lo = -FLT_MAX, hi = FLT_MAX; break;
  default: return GS_OK;
  }
  bool fits;
  if (!v.is_float) fits = dt == GS_INT64 || ((double)v.i >= lo && (double)v.i <= hi);
  else if (gs_dtype_is_float(dt)) fits = !isfinite(v.f) || (v.f >= lo && v.f <= hi);
  else fits = isfinite(v.f) && trunc(v.f) >= lo && (dt == GS_INT64 ? trunc(v.f) < hi : trunc(v.f) <= hi);
  if (fits) return GS_OK;
  char num[48];
  if (v.is_float && isnan(v.f)) snprintf(num, sizeof num, "nan"); /* not "-nan": 0/0 has its sign bit set */
  else if (v.is_float) snprintf(num, sizeof num, "%.17g", v.f);
  else snprintf(num, sizeof num, "%lld", (long long)v.i);
  return gs_error("value cannot be converted to type %s without overflow: %s", gs_dtype_name(dt), num);
}

gs_status gs_fill_(gs_tensor *x, gs_scalar v) {
  const gs_backend *be;
  GS_DISPATCH(be, x, fill, "fill_");
  GS_TRY(gs_check_writable(x));
  gs_log_op("fill_", x);
  GS_TRY(be->fill(x, v));
  x->buf->version++;
  return GS_OK;
}

gs_status gs_fill_tensor_(gs_tensor *x, const gs_tensor *v) {
  if (v->ndim != 0)
    return gs_error("fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.", v->ndim);
  return gs_copy_(x, v);
}

gs_status gs_full(gs_device dev, gs_dtype dt, int ndim, const int64_t *shape, gs_scalar v, gs_tensor **out) {
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(dev, dt, ndim, shape, &t));
  gs_status s = gs_fill_(t, v);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  t->buf->version = 0; /* a new tensor is at version 0, as PyTorch's */
  *out = t;
  return GS_OK;
}
