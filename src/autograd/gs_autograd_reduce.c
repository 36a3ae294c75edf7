/* gs_autograd_reduce.c: differentiable reductions, softmax, matrix
 * products and the negative log-likelihood loss. */
#include <string.h>
#include "core/gs_devflag.h"
#include "autograd/gs_autograd.h"

#define REL(t) gs_tensor_release(t)


/* ---- sum / mean: the gradient spreads back over the reduced dim ---- */

static gs_status bw_sum(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  int dim = (int)n->ints[0];
  bool keepdim = n->ints[1], mean = n->ints[2];
  gs_tensor *gu = NULL, *e = NULL;
  gs_status s = GS_OK;
  if (dim >= 0 && !keepdim && n->in_ndim[0] > 0) s = gs_unsqueeze(g, dim, &gu);
  else { gs_tensor_retain(g); gu = g; }
  if (s == GS_OK) s = gs_expand(gu, n->in_ndim[0], n->in_shape[0], &e);
  if (s == GS_OK) {
    if (mean) s = gs_binary_scalar(GS_B_DIV, e, gs_scalar_f(n->scalar[0]), false, &gr[0]);
    else s = gs_contiguous(e, &gr[0]);
  }
  REL(gu); REL(e);
  return s;
}

static gs_status record_sum(gs_tensor *x, int dim, bool keepdim, bool mean, gs_tensor **out) {
  if (!gs_ag_wants(&x, 1) || !gs_dtype_is_float((*out)->dtype)) return GS_OK;
  gs_node *n = gs_node_new(mean ? (dim < 0 ? "MeanBackward0" : "MeanBackward1") : (dim < 0 ? "SumBackward0" : "SumBackward1"),
                           bw_sum, 1, &x);
  if (n) {
    n->ints[0] = x->ndim == 0 ? -1 : dim;
    n->ints[1] = keepdim;
    n->ints[2] = mean;
    n->scalar[0] = (double)(dim < 0 || x->ndim == 0 ? gs_numel(x) : x->shape[dim]);
  }
  return gs_ag_record(n, out, GS_OK);
}

gs_status gs_ag_sum(gs_tensor *x, int dim, bool keepdim, gs_tensor **out) {
  GS_TRY(gs_reduce(GS_R_SUM, x, dim, keepdim, out, NULL));
  return record_sum(x, dim, keepdim, false, out);
}

gs_status gs_ag_mean(gs_tensor *x, int dim, bool keepdim, gs_tensor **out) {
  GS_TRY(gs_mean(x, dim, keepdim, out));
  return record_sum(x, dim, keepdim, true, out);
}

/* ---- prod: each element's gradient is g times the product of the
 * others. With z the zeros of x, x1 = x with zeros made 1 and p1 the
 * product of x1: no zero in the slice gives g*p1/x1; exactly one zero
 * gives g*p1 at the zero and 0 elsewhere; two or more give 0. ---- */

static gs_status bw_prod(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  int dim = (int)n->ints[0];
  bool keepdim = n->ints[1];
  gs_tensor *x = n->saved[0];
  gs_tensor *gu = NULL, *z = NULL, *nz = NULL, *x1 = NULL, *p1 = NULL, *none = NULL, *one = NULL,
            *q = NULL, *a = NULL, *b = NULL, *w = NULL;
  gs_status s = GS_OK;
  if (dim >= 0 && !keepdim) s = gs_unsqueeze(g, dim, &gu);
  else { gs_tensor_retain(g); gu = g; }
  if (s == GS_OK) s = gs_binary_scalar(GS_B_EQ, x, gs_scalar_i(0), false, &z);
  if (s == GS_OK) s = gs_reduce(GS_R_SUM, z, dim, true, &nz, NULL);
  if (s == GS_OK) s = gs_binary(GS_B_ADD, x, z, &x1);
  if (s == GS_OK) s = gs_reduce(GS_R_PROD, x1, dim, true, &p1, NULL);
  if (s == GS_OK) s = gs_binary_scalar(GS_B_EQ, nz, gs_scalar_i(0), false, &none);
  if (s == GS_OK) s = gs_binary_scalar(GS_B_EQ, nz, gs_scalar_i(1), false, &one);
  if (s == GS_OK) s = gs_binary(GS_B_DIV, p1, x1, &q);
  if (s == GS_OK) s = gs_binary(GS_B_MUL, none, q, &a);       /* no zero: p1/x1 */
  if (s == GS_OK) { REL(q); q = NULL; s = gs_binary(GS_B_MUL, one, z, &q); }
  if (s == GS_OK) s = gs_binary(GS_B_MUL, q, p1, &b);         /* one zero: p1 there */
  if (s == GS_OK) s = gs_binary(GS_B_ADD, a, b, &w);
  if (s == GS_OK) s = gs_binary(GS_B_MUL, gu, w, &gr[0]);
  REL(gu); REL(z); REL(nz); REL(x1); REL(p1); REL(none); REL(one); REL(q); REL(a); REL(b); REL(w);
  return s;
}

gs_status gs_ag_prod(gs_tensor *x, int dim, bool keepdim, gs_tensor **out) {
  GS_TRY(gs_reduce(GS_R_PROD, x, dim, keepdim, out, NULL));
  if (!gs_ag_wants(&x, 1) || !gs_dtype_is_float((*out)->dtype)) return GS_OK;
  gs_node *n = gs_node_new(dim < 0 ? "ProdBackward0" : "ProdBackward1", bw_prod, 1, &x);
  gs_status s = GS_OK;
  if (n) {
    n->ints[0] = x->ndim == 0 ? -1 : dim;
    n->ints[1] = keepdim;
    s = gs_node_save(n, 0, x);
  }
  return gs_ag_record(n, out, s);
}

/* ---- softmax ---- */

static gs_status bw_softmax(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  int dim = (int)n->ints[0];
  bool log = n->ints[1];
  gs_tensor *y = n->saved[0], *t = NULL, *s1 = NULL, *u = NULL, *e = NULL;
  gs_status s;
  if (!log) { /* y * (g - sum(g*y)) */
    s = gs_binary(GS_B_MUL, g, y, &t);
    if (s == GS_OK) s = gs_reduce(GS_R_SUM, t, dim, true, &s1, NULL);
    if (s == GS_OK) s = gs_binary(GS_B_SUB, g, s1, &u);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, y, u, &gr[0]);
  } else { /* g - exp(y) * sum(g) */
    s = gs_reduce(GS_R_SUM, g, dim, true, &s1, NULL);
    if (s == GS_OK) s = gs_unary(GS_U_EXP, y, NULL, &e);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, e, s1, &t);
    if (s == GS_OK) s = gs_binary(GS_B_SUB, g, t, &gr[0]);
  }
  REL(t); REL(s1); REL(u); REL(e);
  return s;
}

gs_status gs_ag_softmax(gs_tensor *x, int dim, bool log, gs_tensor **out) {
  GS_TRY(gs_softmax(x, dim, log, out));
  if (!gs_ag_wants(&x, 1)) return GS_OK;
  gs_node *n = gs_node_new(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", bw_softmax, 1, &x);
  gs_status s = GS_OK;
  if (n) {
    n->ints[0] = x->ndim == 0 ? -1 : dim;
    n->ints[1] = log;
    s = gs_node_save(n, 0, *out);
  }
  return gs_ag_record(n, out, s);
}

/* ---- matrix products ---- */

static gs_status transpose_last(const gs_tensor *x, gs_tensor **out) {
  return gs_transpose(x, x->ndim - 2, x->ndim - 1, out);
}

/* The gradients of a product of matrices a [M, K] and b [K, N], given g
 * [M, N]: ga = g @ b^T and gb = a^T @ g. When an operand is a transposed
 * view (Linear's w:t()), its gradient is computed transposed as well,
 * gb = (g^T @ a)^T, as PyTorch's mm backward does: after the operand's
 * own transpose backward the parameter's gradient is then contiguous,
 * and accumulating it into .grad needs no transposing copy. */
static bool transposed_view(const gs_tensor *x) {
  return x->ndim == 2 && x->shape[0] > 1 && x->shape[1] > 1 && x->stride[0] == 1 && x->stride[1] == x->shape[0];
}

/* out = x @ y, or (y^T @ x^T)^T when `transposed` */
static gs_status mm_laid_out(const gs_tensor *x, const gs_tensor *y, bool transposed, gs_tensor **out) {
  if (!transposed) return gs_mm(x, y, out);
  gs_tensor *xt = NULL, *yt = NULL, *p = NULL;
  gs_status s = gs_transpose(x, 0, 1, &xt);
  if (s == GS_OK) s = gs_transpose(y, 0, 1, &yt);
  if (s == GS_OK) s = gs_mm(yt, xt, &p);
  if (s == GS_OK) s = gs_transpose(p, 0, 1, out);
  REL(xt); REL(yt); REL(p);
  return s;
}

static gs_status mm_grad_a(const gs_tensor *g, const gs_tensor *a, const gs_tensor *b, gs_tensor **out) {
  gs_tensor *bt = NULL;
  gs_status s = gs_transpose(b, 0, 1, &bt);
  if (s == GS_OK) s = mm_laid_out(g, bt, transposed_view(a), out);
  REL(bt);
  return s;
}

static gs_status mm_grad_b(const gs_tensor *g, const gs_tensor *a, const gs_tensor *b, gs_tensor **out) {
  gs_tensor *at = NULL;
  gs_status s = gs_transpose(a, 0, 1, &at);
  if (s == GS_OK) s = mm_laid_out(at, g, transposed_view(b), out);
  REL(at);
  return s;
}

/* For matmul's general case: 1-d operands become matrices (a: [1, K],
 * b: [K, 1]) and g gets the dims they dropped, then ga = g @ b^T and
 * gb = a^T @ g, each reduced to its operand's shape. */
static gs_status bw_matmul(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_tensor *a = n->saved[0], *b = n->saved[1];
  if (a->ndim == 2 && b->ndim == 2) { /* mm */
    gs_status s = GS_OK;
    if (n->next_fn[0] || n->next_leaf[0]) s = mm_grad_a(g, a, b, &gr[0]);
    if (s == GS_OK && (n->next_fn[1] || n->next_leaf[1])) s = mm_grad_b(g, a, b, &gr[1]);
    return s;
  }
  gs_tensor *a2 = NULL, *b2 = NULL, *g2 = NULL, *g3 = NULL, *at = NULL, *bt = NULL, *ga = NULL, *gb = NULL;
  bool av = a->ndim == 1, bv = b->ndim == 1;
  gs_status s = av ? gs_unsqueeze(a, 0, &a2) : (gs_tensor_retain(a), a2 = a, GS_OK);
  if (s == GS_OK) s = bv ? gs_unsqueeze(b, 1, &b2) : (gs_tensor_retain(b), b2 = b, GS_OK);
  if (s == GS_OK) s = av ? gs_unsqueeze(g, bv ? g->ndim : g->ndim - 1, &g2) : (gs_tensor_retain(g), g2 = g, GS_OK);
  if (s == GS_OK) s = bv ? gs_unsqueeze(g2, g2->ndim, &g3) : (gs_tensor_retain(g2), g3 = g2, GS_OK);
  if (s == GS_OK) s = transpose_last(b2, &bt);
  if (s == GS_OK) s = transpose_last(a2, &at);
  if (s == GS_OK && n->next_fn[0] == NULL && n->next_leaf[0] == NULL) { /* a needs no grad */ }
  else if (s == GS_OK) {
    s = gs_matmul(g3, bt, &ga);
    gs_tensor *r = NULL;
    if (s == GS_OK) s = gs_sum_to(ga, a2->ndim, a2->shape, &r);
    if (s == GS_OK) s = gs_reshape(r, a->ndim, a->shape, &gr[0]);
    REL(r);
  }
  if (s == GS_OK && (n->next_fn[1] || n->next_leaf[1])) {
    s = gs_matmul(at, g3, &gb);
    gs_tensor *r = NULL;
    if (s == GS_OK) s = gs_sum_to(gb, b2->ndim, b2->shape, &r);
    if (s == GS_OK) s = gs_reshape(r, b->ndim, b->shape, &gr[1]);
    REL(r);
  }
  REL(a2); REL(b2); REL(g2); REL(g3); REL(at); REL(bt); REL(ga); REL(gb);
  return s;
}

gs_status gs_ag_matmul(gs_tensor *a, gs_tensor *b, int which, gs_tensor **out) {
  GS_TRY(which == 0 ? gs_matmul(a, b, out) : which == 1 ? gs_mm(a, b, out) : gs_bmm(a, b, out));
  gs_tensor *ins[2] = {a, b};
  if (!gs_ag_wants(ins, 2) || !gs_dtype_is_float((*out)->dtype)) return GS_OK;
  const char *name = which == 2 ? "BmmBackward0"
                   : a->ndim == 2 && b->ndim == 2 ? "MmBackward0"
                   : a->ndim == 1 && b->ndim == 1 ? "DotBackward0"
                   : a->ndim == 2 && b->ndim == 1 ? "MvBackward0" : "UnsafeViewBackward0";
  gs_node *n = gs_node_new(name, bw_matmul, 2, ins);
  gs_status s = GS_OK;
  if (n) {
    s = gs_node_save(n, 0, a);
    if (s == GS_OK) s = gs_node_save(n, 1, b);
  }
  return gs_ag_record(n, out, s);
}

/* addmm(bias, a, b) = bias + a @ b */
static gs_status bw_addmm(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_tensor *a = n->saved[0], *b = n->saved[1];
  gs_status s = GS_OK;
  if (n->next_fn[0] || n->next_leaf[0]) { gs_tensor_retain(g); gr[0] = g; }
  if (n->next_fn[1] || n->next_leaf[1]) s = mm_grad_a(g, a, b, &gr[1]);
  if (s == GS_OK && (n->next_fn[2] || n->next_leaf[2])) s = mm_grad_b(g, a, b, &gr[2]);
  return s;
}

gs_status gs_ag_addmm(gs_tensor *bias, gs_tensor *a, gs_tensor *b, gs_tensor **out) {
  gs_tensor *p;
  GS_TRY(gs_mm(a, b, &p));
  gs_status s = gs_binary(GS_B_ADD, bias, p, out);
  REL(p);
  GS_TRY(s);
  if ((*out)->ndim != 2 || (*out)->shape[0] != a->shape[0] || (*out)->shape[1] != b->shape[1]) {
    REL(*out);
    *out = NULL;
    return gs_error("addmm: the bias (shape [..]) must broadcast to the product's shape [%lld, %lld]",
                    (long long)a->shape[0], (long long)b->shape[1]);
  }
  gs_tensor *ins[3] = {bias, a, b};
  if (!gs_ag_wants(ins, 3)) return GS_OK;
  gs_node *n = gs_node_new("AddmmBackward0", bw_addmm, 3, ins);
  s = GS_OK;
  if (n) {
    s = gs_node_save(n, 0, a);
    if (s == GS_OK) s = gs_node_save(n, 1, b);
  }
  return gs_ag_record(n, out, s);
}

/* ---- nll_loss: -mean(logp[i, target[i]]) through a one-hot mask, which
 * every backend can compute with its elementwise kernels ---- */

static gs_status one_hot(const gs_tensor *target, int64_t classes, gs_dtype dt, gs_tensor **out) {
  gs_tensor *cls = NULL, *col = NULL, *eq = NULL;
  gs_status s = gs_arange(gs_tensor_device(target), GS_INT64, 0, (double)classes, 1, &cls);
  if (s == GS_OK) s = gs_unsqueeze(target, 1, &col);
  if (s == GS_OK) s = gs_binary(GS_B_EQ, col, cls, &eq);
  if (s == GS_OK) s = gs_cast(eq, dt, out);
  REL(cls); REL(col); REL(eq);
  return s;
}

static gs_status bw_nll(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_tensor *mask = n->saved[0], *t = NULL;
  gs_status s = gs_binary(GS_B_MUL, mask, g, &t);
  if (s == GS_OK) s = gs_binary_scalar(GS_B_MUL, t, gs_scalar_f(-1.0 / n->scalar[0]), false, &gr[0]);
  REL(t);
  return s;
}

gs_status gs_ag_nll_loss(gs_tensor *logp, gs_tensor *target, gs_tensor **out) {
  if (logp->ndim != 2) return gs_error("nll_loss: expected input of shape [N, C], got %d dims", logp->ndim);
  if (target->ndim != 1 || target->shape[0] != logp->shape[0])
    return gs_error("nll_loss: expected a target of shape [%lld] (one class per row), got %d dims",
                    (long long)logp->shape[0], target->ndim);
  if (gs_dtype_is_float(target->dtype) || target->dtype == GS_BOOL)
    return gs_error("nll_loss: expected integer class indices (1-based) as target, got %s", gs_dtype_name(target->dtype));
  GS_TRY(gs_check_same_device(logp, target));
  /* every class index must be in [0, C) once 0-based: checked by the
   * device without the host waiting (a GPU reports a bad one at the next
   * synchronisation; the message counts from 1 again) */
  gs_tensor *t0, *t64 = NULL;
  GS_TRY(gs_binary_scalar(GS_B_SUB, target, gs_scalar_i(1), false, &t0));
  gs_status s = GS_OK;
  if (target->shape[0] > 0) {
    const gs_backend *be = gs_device_backend(gs_tensor_device(target));
    if (!be || !be->check_index) s = gs_no_kernel("nll_loss", target);
    if (s == GS_OK) s = gs_cast(t0, GS_INT64, &t64);
    if (s == GS_OK) s = be->check_index(t64, logp->shape[1], GS_FLAG_NLL_TARGET);
  }
  gs_tensor *mask = NULL, *picked = NULL, *total = NULL;
  /* from the checked tensor: a queued device marks what is computed from
   * a bad index (backend/sim/sim_queue.c), so the loss never reads as a good one */
  if (s == GS_OK) s = one_hot(t64 ? t64 : t0, logp->shape[1], logp->dtype, &mask);
  REL(t64);
  REL(t0);
  if (s == GS_OK) s = gs_binary(GS_B_MUL, logp, mask, &picked);
  if (s == GS_OK) s = gs_reduce(GS_R_SUM, picked, -1, false, &total, NULL);
  double count = (double)logp->shape[0];
  if (s == GS_OK) s = gs_binary_scalar(GS_B_MUL, total, gs_scalar_f(-1.0 / count), false, out);
  REL(picked); REL(total);
  if (s != GS_OK) { REL(mask); return s; }
  if (!gs_ag_wants(&logp, 1)) { REL(mask); return GS_OK; }
  gs_node *n = gs_node_new("NllLossBackward0", bw_nll, 1, &logp);
  if (n) { n->saved[0] = mask; n->saved_version[0] = mask->buf->version; n->scalar[0] = count; }
  else REL(mask);
  return gs_ag_record(n, out, GS_OK);
}
