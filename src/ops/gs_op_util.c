/* gs_op_util.c: what every op shares: device checks and messages,
 * broadcasting, PyTorch's result_type and casts, and the placement log.
 * Moves between devices are the copy engine's (gs_op_copy.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/gs_ops.h"

bool gs_log_placement = false;

void gs_log_op(const char *op, const gs_tensor *t) {
  if (!gs_log_placement) return;
  char name[24];
  gs_device_name(gs_tensor_device(t), name, sizeof name);
  fprintf(stdout, "Executing op %s in device %s\n", op, name);
  fflush(stdout);
}

/* PyTorch's short type names, used in its error messages. */
const char *gs_dtype_torch_name(gs_dtype t) {
  static const char *n[GS_NDTYPES] = {"Float", "Double", "Half", "BFloat16", "Long",
                                      "Int", "Short", "Char", "Byte", "Bool"};
  return n[t];
}

gs_status gs_check_same_device(const gs_tensor *a, const gs_tensor *b) {
  gs_device da = gs_tensor_device(a), db = gs_tensor_device(b);
  if (gs_device_equal(da, db)) return GS_OK;
  char na[24], nb[24];
  /* PyTorch names the CUDA device first when one side is the CPU */
  if (da.type == GS_CPU) { gs_device t = da; da = db; db = t; }
  gs_device_name(da, na, sizeof na);
  gs_device_name(db, nb, sizeof nb);
  return gs_error("Expected all tensors to be on the same device, but found at least two devices, %s and %s!", na, nb);
}

void gs_shape_str_n(int n, const int64_t *s, char *buf, size_t len) {
  size_t k = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < n && k < len; i++) k += (size_t)snprintf(buf + k, len - k, i ? ", %lld" : "%lld", (long long)s[i]);
  if (k < len) snprintf(buf + k, len - k, "]");
}

void gs_shape_str(const gs_tensor *t, char *buf, size_t len) { gs_shape_str_n(t->ndim, t->shape, buf, len); }

gs_status gs_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      char s1[128], s2[128];
      gs_shape_str_n(na, a, s1, sizeof s1);
      gs_shape_str_n(nb, b, s2, sizeof s2);
      return gs_error("The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton "
                      "dimension %d (shapes %s and %s cannot be broadcast)", (long long)sa, (long long)sb,
                      i + 1, s1, s2);
    }
    out[i] = sa == 1 ? sb : sa;
  }
  *nout = n;
  return GS_OK;
}

gs_status gs_expand(const gs_tensor *x, int ndim, const int64_t *shape, gs_tensor **out) {
  if (ndim == x->ndim && memcmp(shape, x->shape, sizeof(int64_t) * (size_t)ndim) == 0) {
    gs_tensor_retain((gs_tensor *)x); /* already that shape: no new header */
    *out = (gs_tensor *)x;
    return GS_OK;
  }
  if (ndim < x->ndim) return gs_error("cannot expand a %d-d tensor to %d dimensions", x->ndim, ndim);
  int64_t stride[GS_MAX_DIMS];
  for (int i = 0; i < ndim; i++) {
    int j = x->ndim - ndim + i;
    if (j < 0) { stride[i] = 0; continue; }
    if (x->shape[j] == shape[i]) stride[i] = x->stride[j];
    else if (x->shape[j] == 1) stride[i] = 0;
    else {
      char s1[128], s2[128];
      gs_shape_str(x, s1, sizeof s1);
      gs_shape_str_n(ndim, shape, s2, sizeof s2);
      return gs_error("The expanded size of the tensor (%lld) must match the existing size (%lld) at "
                      "non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                      (long long)shape[i], (long long)x->shape[j], i + 1, s2, s1);
    }
  }
  *out = gs_tensor_view_of(x, ndim, shape, stride, x->offset);
  return *out ? GS_OK : gs_error_code(GS_ERR_OOM, "out of host memory");
}

gs_status gs_no_kernel(const char *op, const gs_tensor *t) {
  char name[24];
  gs_device_name(gs_tensor_device(t), name, sizeof name);
  const gs_backend *be = gs_device_backend(gs_tensor_device(t));
  return gs_error("%s is not implemented on %s (backend %s)", op, name, be ? be->name : "none");
}

/* result_type: dimensioned tensors outrank 0-d tensors, which outrank
 * Lua numbers; a lower rank only matters when its category is higher. */
static gs_dtype combine(int has_hi, gs_dtype hi, int has_lo, gs_dtype lo) {
  if (!has_hi) return lo;
  if (!has_lo) return hi;
  if (gs_dtype_is_float(hi)) return hi;
  if (hi == GS_BOOL || gs_dtype_is_float(lo)) return gs_promote(hi, lo);
  return hi;
}

gs_dtype gs_result_type2(const gs_tensor *a, const gs_tensor *b) {
  int hd = 0, hz = 0;
  gs_dtype d = GS_BOOL, z = GS_BOOL;
  const gs_tensor *ts[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    if (ts[i]->ndim > 0) { d = hd ? gs_promote(d, ts[i]->dtype) : ts[i]->dtype; hd = 1; }
    else { z = hz ? gs_promote(z, ts[i]->dtype) : ts[i]->dtype; hz = 1; }
  }
  return combine(hd, d, hz, z);
}

gs_dtype gs_result_type_scalar(const gs_tensor *a, gs_scalar s) {
  gs_dtype w = s.is_bool ? GS_BOOL : s.is_float ? GS_FLOAT32 : GS_INT64; /* default dtype / long */
  return combine(1, a->dtype, 1, w);
}

gs_status gs_cast(const gs_tensor *x, gs_dtype dt, gs_tensor **out) {
  if (x->dtype == dt) { gs_tensor_retain((gs_tensor *)x); *out = (gs_tensor *)x; return GS_OK; }
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(gs_tensor_device(x), dt, x->ndim, x->shape, &t));
  gs_status s = gs_copy_(t, x);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  *out = t;
  return GS_OK;
}
