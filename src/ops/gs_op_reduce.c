/* gs_op_reduce.c: reductions (whole tensor or along one dim, keepdim),
 * statistics built on them, softmax, and tensor comparison. */
#include <math.h>
#include <string.h>
#include "ops/gs_ops.h"

/* Output shape: x's without dim (or with it as 1 when keepdim); 0-d for
 * a whole-tensor reduction. */
static int reduced_shape(const gs_tensor *x, int dim, bool keepdim, int64_t *shape) {
  if (dim < 0) return 0;
  int n = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (i != dim) shape[n++] = x->shape[i];
    else if (keepdim) shape[n++] = 1;
  }
  return n;
}

gs_status gs_reduce(gs_reduce_op op, const gs_tensor *x, int dim, bool keepdim, gs_tensor **values, gs_tensor **indices) {
  const gs_backend *be;
  GS_DISPATCH(be, x, reduce, gs_reduce_name(op));
  if (x->ndim == 0) dim = -1; /* a 0-d tensor reduces to itself along dim 1 or -1 */
  bool extremum = op != GS_R_SUM && op != GS_R_PROD;
  if (extremum && (dim < 0 ? gs_numel(x) == 0 : x->shape[dim] == 0)) {
    if (dim < 0)
      return gs_error("%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                      "reduction dim with the 'dim' argument.", gs_reduce_name(op));
    return gs_error("%s(): Expected reduction dim %d to have non-zero size.", gs_reduce_name(op), dim + 1);
  }
  /* sum and prod of integers and bools give int64, as in PyTorch */
  gs_dtype vt = (op == GS_R_SUM || op == GS_R_PROD) && !gs_dtype_is_float(x->dtype) ? GS_INT64 : x->dtype;
  gs_dtype cdt = gs_compute_dtype(x->dtype);
  int64_t shape[GS_MAX_DIMS];
  int nd = reduced_shape(x, dim, keepdim, shape);
  gs_tensor *cx = NULL, *tmp = NULL, *cc = NULL, *v = NULL, *idx = NULL;
  gs_status s = gs_cast(x, cdt, &tmp);
  if (s == GS_OK) s = gs_contiguous(tmp, &cx);
  bool arg = op == GS_R_ARGMAX || op == GS_R_ARGMIN;
  if (s == GS_OK) s = gs_tensor_empty(gs_tensor_device(x), arg ? GS_INT64 : cdt, nd, shape, &v);
  if (s == GS_OK && indices && !arg) s = gs_tensor_empty(gs_tensor_device(x), GS_INT64, nd, shape, &idx);
  if (s == GS_OK) { gs_log_op(gs_reduce_name(op), x); s = be->reduce(op, v, idx, cx, dim); }
  if (s == GS_OK && !arg) s = gs_cast(v, vt, &cc);
  gs_tensor_release(tmp);
  gs_tensor_release(cx);
  if (arg) cc = v; else gs_tensor_release(v);
  if (s != GS_OK) { gs_tensor_release(cc); gs_tensor_release(idx); return s; }
  if (values) *values = cc; else gs_tensor_release(cc);
  if (indices) *indices = idx; else gs_tensor_release(idx);
  return GS_OK;
}

static gs_status need_float(const gs_tensor *x, const char *op) {
  if (gs_dtype_is_float(x->dtype)) return GS_OK;
  return gs_error("%s(): could not infer output dtype. Input dtype must be either a floating point or complex "
                  "dtype. Got: %s", op, gs_dtype_torch_name(x->dtype));
}

static int64_t reduced_count(const gs_tensor *x, int dim) { return dim < 0 || x->ndim == 0 ? gs_numel(x) : x->shape[dim]; }

gs_status gs_mean(const gs_tensor *x, int dim, bool keepdim, gs_tensor **out) {
  GS_TRY(need_float(x, "mean"));
  gs_tensor *s;
  GS_TRY(gs_reduce(GS_R_SUM, x, dim, keepdim, &s, NULL));
  gs_status st = gs_binary_scalar(GS_B_DIV, s, gs_scalar_f((double)reduced_count(x, dim)), false, out);
  gs_tensor_release(s);
  return st;
}

/* var = sum((x - mean)^2) / (n - correction): two passes, so no
 * cancellation from the sum-of-squares formula. */
gs_status gs_var(const gs_tensor *x, int dim, bool keepdim, int64_t correction, bool take_sqrt, gs_tensor **out) {
  GS_TRY(need_float(x, take_sqrt ? "std" : "var"));
  gs_tensor *m = NULL, *d = NULL, *d2 = NULL, *ss = NULL, *v = NULL;
  gs_status s = gs_mean(x, dim, true, &m);
  if (s == GS_OK) s = gs_binary(GS_B_SUB, x, m, &d);
  if (s == GS_OK) s = gs_binary(GS_B_MUL, d, d, &d2);
  if (s == GS_OK) s = gs_reduce(GS_R_SUM, d2, dim, keepdim, &ss, NULL);
  double denom = (double)(reduced_count(x, dim) - correction);
  if (s == GS_OK) s = gs_binary_scalar(GS_B_DIV, ss, gs_scalar_f(denom > 0 ? denom : 0.0), false, &v);
  if (s == GS_OK && take_sqrt) { gs_tensor *r; s = gs_unary(GS_U_SQRT, v, NULL, &r); gs_tensor_release(v); v = r; }
  gs_tensor_release(m); gs_tensor_release(d); gs_tensor_release(d2); gs_tensor_release(ss);
  if (s == GS_OK) *out = v; else gs_tensor_release(v);
  return s;
}

gs_status gs_norm(const gs_tensor *x, double p, gs_tensor **out) {
  GS_TRY(need_float(x, "norm"));
  gs_tensor *a = NULL, *ap = NULL, *s = NULL;
  gs_status st = gs_unary(GS_U_ABS, x, NULL, &a);
  if (isinf(p)) {
    if (st == GS_OK) st = gs_reduce(p > 0 ? GS_R_MAX : GS_R_MIN, a, -1, false, out, NULL);
    gs_tensor_release(a);
    return st;
  }
  if (p == 0) { /* the count of non-zeros */
    gs_tensor *nz = NULL, *f = NULL;
    if (st == GS_OK) st = gs_binary_scalar(GS_B_NE, a, gs_scalar_f(0), false, &nz);
    if (st == GS_OK) st = gs_cast(nz, x->dtype, &f);
    if (st == GS_OK) st = gs_reduce(GS_R_SUM, f, -1, false, out, NULL);
    gs_tensor_release(a); gs_tensor_release(nz); gs_tensor_release(f);
    return st;
  }
  if (st == GS_OK) st = p == 1 ? (gs_tensor_retain(a), ap = a, GS_OK) : p == 2 ? gs_unary(GS_U_SQUARE, a, NULL, &ap)
                                : gs_binary_scalar(GS_B_POW, a, gs_scalar_f(p), false, &ap);
  if (st == GS_OK) st = gs_reduce(GS_R_SUM, ap, -1, false, &s, NULL);
  if (st == GS_OK) st = p == 1 ? (gs_tensor_retain(s), *out = s, GS_OK) : p == 2 ? gs_unary(GS_U_SQRT, s, NULL, out)
                                : gs_binary_scalar(GS_B_POW, s, gs_scalar_f(1.0 / p), false, out);
  gs_tensor_release(a); gs_tensor_release(ap); gs_tensor_release(s);
  return st;
}

gs_status gs_all_any(const gs_tensor *x, bool any, gs_tensor **out) {
  gs_tensor *nz = NULL, *i = NULL, *r = NULL;
  gs_status s = gs_binary_scalar(GS_B_NE, x, gs_scalar_i(0), false, &nz);
  if (s == GS_OK) s = gs_cast(nz, GS_INT64, &i);
  if (s == GS_OK) {
    if (gs_numel(i) == 0) s = gs_full(gs_tensor_device(x), GS_INT64, 0, NULL, gs_scalar_i(any ? 0 : 1), &r);
    else s = gs_reduce(any ? GS_R_MAX : GS_R_MIN, i, -1, false, &r, NULL);
  }
  if (s == GS_OK) s = gs_cast(r, GS_BOOL, out);
  gs_tensor_release(nz); gs_tensor_release(i); gs_tensor_release(r);
  return s;
}

gs_status gs_softmax(const gs_tensor *x, int dim, bool log, gs_tensor **out) {
  const char *name = log ? "log_softmax" : "softmax";
  const gs_backend *be;
  GS_DISPATCH(be, x, softmax, name);
  if (!gs_dtype_is_float(x->dtype))
    return gs_error("%s: expected a floating point tensor, got %s (convert with :float() first)", name,
                    gs_dtype_torch_name(x->dtype));
  gs_dtype cdt = gs_compute_dtype(x->dtype);
  gs_tensor *cx = NULL, *tmp = NULL, *r = NULL;
  gs_status s = gs_cast(x, cdt, &tmp);
  if (s == GS_OK) s = gs_contiguous(tmp, &cx);
  if (s == GS_OK) s = gs_tensor_empty_like(cx, &r);
  if (s == GS_OK && gs_numel(cx) > 0) { gs_log_op(name, x); s = be->softmax(r, cx, x->ndim == 0 ? -1 : dim, log); }
  if (s == GS_OK) s = gs_cast(r, x->dtype, out);
  gs_tensor_release(tmp); gs_tensor_release(cx); gs_tensor_release(r);
  return s;
}

gs_status gs_item(const gs_tensor *x, gs_scalar *out) {
  int64_t n = gs_numel(x);
  if (n != 1)
    return gs_error("a Tensor with %lld elements cannot be converted to Scalar (item() needs exactly one element)",
                    (long long)n);
  gs_tensor *h;
  GS_TRY(gs_to_host_contiguous(x, &h));
  const void *p = gs_tensor_ptr(h);
  if (h->dtype == GS_BOOL) *out = gs_scalar_b(*(const uint8_t *)p != 0);
  else if (gs_dtype_is_float(h->dtype)) *out = gs_scalar_f(gs_load_f64(h->dtype, p));
  else *out = gs_scalar_i(gs_load_i64(h->dtype, p));
  gs_tensor_release(h);
  return GS_OK;
}

/* Reads a 0-d bool tensor back to the host. */
static gs_status read_bool(const gs_tensor *t, bool *out) {
  gs_scalar v;
  GS_TRY(gs_item(t, &v));
  *out = v.i != 0;
  return GS_OK;
}

gs_status gs_equal(const gs_tensor *a, const gs_tensor *b, bool *out) {
  GS_TRY(gs_check_same_device(a, b));
  if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) != 0) { *out = false; return GS_OK; }
  gs_tensor *eq = NULL, *all = NULL;
  gs_status s = gs_binary(GS_B_EQ, a, b, &eq);
  if (s == GS_OK) s = gs_all_any(eq, false, &all);
  if (s == GS_OK) s = read_bool(all, out);
  gs_tensor_release(eq); gs_tensor_release(all);
  return s;
}

/* |a - b| <= atol + rtol * |b|, elementwise, all true; NaN is never close. */
gs_status gs_allclose(const gs_tensor *a, const gs_tensor *b, double rtol, double atol, bool *out) {
  GS_TRY(gs_check_same_device(a, b));
  gs_tensor *d = NULL, *ad = NULL, *ab = NULL, *tol = NULL, *tol2 = NULL, *ok = NULL, *all = NULL, *eq = NULL, *ok2 = NULL;
  gs_dtype dt = gs_result_type2(a, b);
  if (!gs_dtype_is_float(dt)) dt = GS_FLOAT64;
  gs_tensor *fa = NULL, *fb = NULL;
  gs_status s = gs_cast(a, dt, &fa);
  if (s == GS_OK) s = gs_cast(b, dt, &fb);
  if (s == GS_OK) s = gs_binary(GS_B_SUB, fa, fb, &d);
  if (s == GS_OK) s = gs_unary(GS_U_ABS, d, NULL, &ad);
  if (s == GS_OK) s = gs_unary(GS_U_ABS, fb, NULL, &ab);
  if (s == GS_OK) s = gs_binary_scalar(GS_B_MUL, ab, gs_scalar_f(rtol), false, &tol);
  if (s == GS_OK) s = gs_binary_scalar(GS_B_ADD, tol, gs_scalar_f(atol), false, &tol2);
  /* PyTorch's isclose only accepts a finite error: inf vs -inf (or a
   * finite value vs inf) has |a - b| = inf <= rtol * inf and would pass */
  gs_tensor *le = NULL, *fin = NULL;
  if (s == GS_OK) s = gs_binary(GS_B_LE, ad, tol2, &le);
  if (s == GS_OK) s = gs_binary_scalar(GS_B_LT, ad, gs_scalar_f(INFINITY), false, &fin);
  if (s == GS_OK) s = gs_binary(GS_B_LOGICAL_AND, le, fin, &ok);
  if (s == GS_OK) s = gs_binary(GS_B_EQ, fa, fb, &eq); /* equal infinities are close */
  if (s == GS_OK) s = gs_binary(GS_B_LOGICAL_OR, ok, eq, &ok2);
  if (s == GS_OK) s = gs_all_any(ok2, false, &all);
  if (s == GS_OK) s = read_bool(all, out);
  gs_tensor *ts[] = {fa, fb, d, ad, ab, tol, tol2, le, fin, ok, eq, ok2, all};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gs_tensor_release(ts[i]);
  return s;
}
