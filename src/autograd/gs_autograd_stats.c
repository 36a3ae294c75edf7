/* gs_autograd_stats.c: gradients of the statistics: var and std and norm
 * are built from recorded ops (so their gradients come from the pieces)
 * and renamed after PyTorch's nodes; max and min route the gradient to
 * the elements that won, split evenly between ties for a whole-tensor
 * max, or to the reported index for max(dim), as PyTorch does. */
#include <math.h>
#include "autograd/gs_autograd.h"

#define REL(t) gs_tensor_release(t)

static void rename_node(gs_tensor *out, const char *name) {
  if (out && out->grad_fn) out->grad_fn->name = name;
}

gs_status gs_ag_var(gs_tensor *x, int dim, bool keepdim, int64_t correction, bool take_sqrt, gs_tensor **out) {
  if (!gs_ag_wants(&x, 1)) return gs_var(x, dim, keepdim, correction, take_sqrt, out);
  if (!gs_dtype_is_float(x->dtype)) return gs_var(x, dim, keepdim, correction, take_sqrt, out); /* its error */
  int64_t n = dim < 0 || x->ndim == 0 ? gs_numel(x) : x->shape[dim];
  double denom = (double)(n - correction);
  gs_tensor *m = NULL, *d = NULL, *d2 = NULL, *s = NULL, *v = NULL;
  gs_status st = gs_ag_mean(x, dim, true, &m);
  if (st == GS_OK) st = gs_ag_binary(GS_B_SUB, x, m, &d);
  if (st == GS_OK) st = gs_ag_binary(GS_B_MUL, d, d, &d2);
  if (st == GS_OK) st = gs_ag_sum(d2, dim, keepdim, &s);
  if (st == GS_OK) st = gs_ag_binary_scalar(GS_B_DIV, s, gs_scalar_f(denom > 0 ? denom : 0.0), false, &v);
  if (st == GS_OK && take_sqrt) { gs_tensor *r = NULL; st = gs_ag_unary(GS_U_SQRT, v, NULL, &r); REL(v); v = r; }
  REL(m); REL(d); REL(d2); REL(s);
  if (st != GS_OK) { REL(v); return st; }
  rename_node(v, take_sqrt ? "StdBackward0" : "VarBackward0");
  *out = v;
  return GS_OK;
}

gs_status gs_ag_norm(gs_tensor *x, double p, gs_tensor **out) {
  if (!gs_ag_wants(&x, 1) || !gs_dtype_is_float(x->dtype) || p == 0 || isinf(p)) {
    if (gs_ag_wants(&x, 1) && isinf(p)) { /* max |x| through the max node */
      gs_tensor *a = NULL;
      gs_status st = gs_ag_unary(GS_U_ABS, x, NULL, &a);
      if (st == GS_OK) st = gs_ag_extremum(a, p > 0, -1, false, out, NULL);
      REL(a);
      rename_node(st == GS_OK ? *out : NULL, "NormBackward1");
      return st;
    }
    return gs_norm(x, p, out); /* p = 0 has a zero gradient: no graph */
  }
  gs_tensor *a = NULL, *ap = NULL, *s = NULL, *r = NULL;
  gs_status st = p == 2 ? gs_ag_unary(GS_U_SQUARE, x, NULL, &ap) : gs_ag_unary(GS_U_ABS, x, NULL, &a);
  if (st == GS_OK && p != 2) st = p == 1 ? (gs_tensor_retain(a), ap = a, GS_OK) : gs_ag_binary_scalar(GS_B_POW, a, gs_scalar_f(p), false, &ap);
  if (st == GS_OK) st = gs_ag_sum(ap, -1, false, &s);
  if (st == GS_OK) st = p == 1 ? (gs_tensor_retain(s), r = s, GS_OK) : p == 2 ? gs_ag_unary(GS_U_SQRT, s, NULL, &r)
                                : gs_ag_binary_scalar(GS_B_POW, s, gs_scalar_f(1.0 / p), false, &r);
  REL(a); REL(ap); REL(s);
  if (st != GS_OK) { REL(r); return st; }
  rename_node(r, "NormBackward1");
  *out = r;
  return GS_OK;
}

/* ---- max / min ---- */

static gs_status bw_extremum(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_tensor *x = n->saved[0], *v = n->saved[1], *mask = NULL, *fm = NULL, *cnt = NULL, *gu = NULL, *t = NULL;
  int dim = (int)n->ints[0];
  bool keepdim = n->ints[1];
  gs_status s;
  if (dim < 0) { /* whole tensor: every element equal to the result shares g */
    s = gs_binary(GS_B_EQ, x, v, &mask);
    if (s == GS_OK) s = gs_cast(mask, x->dtype, &fm);
    if (s == GS_OK) s = gs_reduce(GS_R_SUM, fm, -1, false, &cnt, NULL);
    if (s == GS_OK) s = gs_binary(GS_B_DIV, g, cnt, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, fm, t, &gr[0]);
  } else { /* along dim: the reported (first) index gets g */
    gs_tensor *idx = n->saved[2], *iu = NULL, *cls = NULL, *shape_cls = NULL;
    int64_t view[GS_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) view[d] = d == dim ? x->shape[d] : 1;
    s = gs_arange(gs_tensor_device(x), GS_INT64, 0, (double)x->shape[dim], 1, &cls);
    if (s == GS_OK) s = gs_view(cls, x->ndim, view, &shape_cls);
    if (s == GS_OK) s = keepdim ? (gs_tensor_retain(idx), iu = idx, GS_OK) : gs_unsqueeze(idx, dim, &iu);
    if (s == GS_OK) s = gs_binary(GS_B_EQ, shape_cls, iu, &mask);
    if (s == GS_OK) s = gs_cast(mask, x->dtype, &fm);
    if (s == GS_OK) s = keepdim ? (gs_tensor_retain(g), gu = g, GS_OK) : gs_unsqueeze(g, dim, &gu);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, fm, gu, &gr[0]);
    REL(iu); REL(cls); REL(shape_cls);
  }
  REL(mask); REL(fm); REL(cnt); REL(gu); REL(t);
  return s;
}

gs_status gs_ag_extremum(gs_tensor *x, bool is_max, int dim, bool keepdim, gs_tensor **values, gs_tensor **indices) {
  gs_tensor *idx = NULL;
  bool need_idx = indices != NULL || (dim >= 0 && gs_ag_wants(&x, 1));
  GS_TRY(gs_reduce(is_max ? GS_R_MAX : GS_R_MIN, x, dim, keepdim, values, need_idx ? &idx : NULL));
  if (!gs_ag_wants(&x, 1) || !gs_dtype_is_float(x->dtype)) {
    if (indices) *indices = idx; else REL(idx);
    return GS_OK;
  }
  if (x->ndim == 0) dim = -1;
  const char *name = dim < 0 ? (is_max ? "MaxBackward1" : "MinBackward1") : (is_max ? "MaxBackward0" : "MinBackward0");
  gs_node *n = gs_node_new(name, bw_extremum, 1, &x);
  gs_status s = n ? GS_OK : gs_error_code(GS_ERR_OOM, "out of memory recording autograd");
  if (s == GS_OK) {
    n->ints[0] = dim;
    n->ints[1] = keepdim;
    s = gs_node_save(n, 0, x);
    if (s == GS_OK) s = gs_node_save(n, 1, *values);
    if (s == GS_OK && idx) s = gs_node_save(n, 2, idx);
  }
  if (s == GS_OK) gs_node_attach(n, *values);
  else { gs_grad_fn_release(n); REL(*values); *values = NULL; REL(idx); return s; }
  if (indices) *indices = idx; else REL(idx);
  return GS_OK;
}
