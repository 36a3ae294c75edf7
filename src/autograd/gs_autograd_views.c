/* gs_autograd_views.c: gradients through views (reshape, transpose,
 * select, slice, expand, ...), device/dtype moves, clone, cat and stack.
 * A view's gradient is routed back to the input's shape: inverse
 * permutations, zeros with the selected part filled, or sums over
 * expanded dims. */
#include <string.h>
#include "autograd/gs_autograd.h"

#define REL(t) gs_tensor_release(t)

/* zeros of the input's shape with g written into the part the view took */
static gs_status scatter_into_zeros(gs_node *n, gs_tensor *g, gs_tensor **gr, bool select) {
  gs_tensor *z = NULL, *part = NULL;
  int dim = (int)n->ints[0];
  gs_status s = gs_full(gs_tensor_device(g), g->dtype, n->in_ndim[0], n->in_shape[0], gs_scalar_i(0), &z);
  if (s == GS_OK) s = select ? gs_select(z, dim, n->ints[1], &part) : gs_slice(z, dim, n->ints[1], n->ints[2], n->ints[3], &part);
  if (s == GS_OK) s = gs_copy_(part, g);
  REL(part);
  if (s == GS_OK) *gr = z; else REL(z);
  return s;
}

/* One backward per kind of view, chosen when the view is recorded. */
static gs_status bw_select(gs_node *n, gs_tensor *g, gs_tensor **gr) { return scatter_into_zeros(n, g, gr, true); }
static gs_status bw_slice(gs_node *n, gs_tensor *g, gs_tensor **gr) { return scatter_into_zeros(n, g, gr, false); }
static gs_status bw_expand(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  return gs_sum_to(g, n->in_ndim[0], n->in_shape[0], gr);
}
static gs_status bw_permute(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  int inv[GS_MAX_DIMS];
  for (int i = 0; i < n->nints; i++) inv[n->ints[i]] = i;
  return gs_permute(g, n->nints, inv, gr);
}
static gs_status bw_transpose(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  return gs_transpose(g, (int)n->ints[0], (int)n->ints[1], gr);
}
/* view, reshape, unsqueeze, squeeze, flatten: back to the input's shape */
static gs_status bw_reshape(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  return gs_reshape(g, n->in_ndim[0], n->in_shape[0], gr);
}

/* Finishes a view op: y (made from x, status s) gets a node routing grads
 * back through `bw`, with the op's parameters in ints. On failure y is
 * released and *out left NULL. */
static gs_status record_view(gs_status s, gs_tensor *x, gs_tensor **out, const char *name, gs_backward_fn bw,
                             const int64_t *ints, int nints) {
  if (s != GS_OK) { *out = NULL; return s; }
  /* every view knows its base, grad mode or not (an in-place write into
   * it changes the base: gs_autograd_inplace.c) */
  if (*out != x && !(*out)->base) {
    (*out)->base = x->base && x->base->buf == x->buf ? x->base : x;
    gs_tensor_retain((*out)->base);
    (*out)->view_version = x->buf->version;
  }
  if (!gs_grad_enabled || !gs_requires_grad(x)) return GS_OK;
  gs_node *n = gs_node_new(name, bw, 1, &x);
  if (n) {
    n->is_view = true;
    n->nints = nints;
    if (nints) memcpy(n->ints, ints, sizeof(int64_t) * (size_t)nints);
  }
  return gs_ag_record(n, out, GS_OK);
}

gs_status gs_ag_view(gs_tensor *x, int ndim, const int64_t *shape, bool reshape, gs_tensor **out) {
  gs_status s = reshape ? gs_reshape(x, ndim, shape, out) : gs_view(x, ndim, shape, out);
  return record_view(s, x, out, "ViewBackward0", bw_reshape, NULL, 0);
}

gs_status gs_ag_flatten(gs_tensor *x, int start, int end, gs_tensor **out) {
  return record_view(gs_flatten(x, start, end, out), x, out, "ViewBackward0", bw_reshape, NULL, 0);
}

gs_status gs_ag_unsqueeze(gs_tensor *x, int dim, gs_tensor **out) {
  return record_view(gs_unsqueeze(x, dim, out), x, out, "UnsqueezeBackward0", bw_reshape, NULL, 0);
}

gs_status gs_ag_squeeze(gs_tensor *x, int dim, gs_tensor **out) {
  return record_view(gs_squeeze(x, dim, out), x, out, "SqueezeBackward0", bw_reshape, NULL, 0);
}

gs_status gs_ag_t(gs_tensor *x, gs_tensor **out) {
  int64_t dims[2] = {0, x->ndim > 1 ? 1 : 0};
  return record_view(gs_t(x, out), x, out, "TBackward0", bw_transpose, dims, 2);
}

gs_status gs_ag_transpose(gs_tensor *x, int d0, int d1, gs_tensor **out) {
  int64_t dims[2] = {d0, d1};
  return record_view(gs_transpose(x, d0, d1, out), x, out, "TransposeBackward0", bw_transpose, dims, 2);
}

gs_status gs_ag_permute(gs_tensor *x, int ndims, const int *dims, gs_tensor **out) {
  gs_status s = gs_permute(x, ndims, dims, out);
  int64_t d64[GS_MAX_DIMS];
  for (int i = 0; s == GS_OK && i < ndims; i++) d64[i] = dims[i];
  return record_view(s, x, out, "PermuteBackward0", bw_permute, d64, ndims);
}

gs_status gs_ag_expand(gs_tensor *x, int ndim, const int64_t *shape, gs_tensor **out) {
  return record_view(gs_expand_to(x, ndim, shape, out), x, out, "ExpandBackward0", bw_expand, NULL, 0);
}

gs_status gs_ag_select(gs_tensor *x, int dim, int64_t index, gs_tensor **out) {
  gs_status s = gs_select(x, dim, index, out); /* checks the bounds */
  int64_t args[2] = {dim, s == GS_OK && index < 0 ? index + x->shape[dim] : index};
  return record_view(s, x, out, "SelectBackward0", bw_select, args, 2);
}

gs_status gs_ag_narrow(gs_tensor *x, int dim, int64_t start, int64_t len, gs_tensor **out) {
  gs_status s = gs_narrow(x, dim, start, len, out); /* checks the bounds */
  int64_t at = s == GS_OK && start < 0 ? start + x->shape[dim] : start;
  int64_t args[4] = {dim, at, s == GS_OK ? at + len : 0, 1}; /* at + len <= size once checked */
  return record_view(s, x, out, "SliceBackward0", bw_slice, args, 4);
}

gs_status gs_ag_slice(gs_tensor *x, int dim, int64_t start, int64_t end, int64_t step, gs_tensor **out) {
  int64_t args[4] = {dim, start, end, step};
  return record_view(gs_slice(x, dim, start, end, step, out), x, out, "SliceBackward0", bw_slice, args, 4);
}

gs_status gs_ag_index(gs_tensor *x, int n, const gs_index_entry *e, gs_tensor **out) {
  if (n > x->ndim) {
    if (x->ndim == 0) return gs_error("invalid index of a 0-dim tensor: it has no dimension to index (item() reads its value)");
    return gs_error("too many indices for tensor of dimension %d (got %d)", x->ndim, n);
  }
  /* x[{}]: a new view of the whole tensor (as PyTorch's x[()]), never x
   * itself: setting its .data or requires_grad must not change x */
  if (n == 0)
    return x->ndim > 0 ? gs_ag_slice(x, 0, 0, x->shape[0], 1, out) : gs_ag_view(x, 0, x->shape, false, out);
  gs_tensor *cur = x;
  gs_tensor_retain(cur);
  int dim = 0; /* where entry k lands in the (shrinking) view */
  for (int k = 0; k < n; k++) {
    gs_tensor *v = NULL;
    gs_status s;
    if (e[k].range) {
      int64_t start, end, step;
      s = gs_index_range(e[k].nvals, e[k].a, e[k].b, e[k].step, k, cur->shape[dim], &start, &end, &step);
      if (s == GS_OK) s = gs_ag_slice(cur, dim, start, end, step, &v);
      dim++;
    } else {
      s = gs_check_index(e[k].pos, cur->shape[dim], k); /* names the user's dim k, not the view's */
      if (s == GS_OK) s = gs_ag_select(cur, dim, e[k].pos, &v);
    }
    REL(cur);
    if (s != GS_OK) return s;
    cur = v;
  }
  *out = cur;
  return GS_OK;
}

/* index_select's gradient: g's rows added back at the indices (repeated
 * ones add up), into zeros of the input's shape */
static gs_status bw_index_select(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  return gs_index_add(g, (int)n->ints[0], n->saved[0], n->in_ndim[0], n->in_shape[0], gr);
}

gs_status gs_ag_index_select(gs_tensor *x, int dim, const gs_tensor *idx, gs_tensor **out) {
  GS_TRY(gs_index_select(x, dim, idx, out));
  if (!gs_grad_enabled || !gs_requires_grad(x) || !gs_dtype_is_float(x->dtype)) return GS_OK;
  gs_node *n = gs_node_new("IndexSelectBackward0", bw_index_select, 1, &x);
  gs_status s = GS_OK;
  if (n) {
    n->ints[0] = dim;
    n->nints = 1;
    s = gs_node_save(n, 0, idx);
  }
  return gs_ag_record(n, out, s);
}

/* ---- to / clone ---- */

static gs_status bw_to(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  return gs_to(g, n->in_device[0], n->in_dtype[0], gr);
}

gs_status gs_ag_to(gs_tensor *x, gs_device dev, gs_dtype dt, gs_tensor **out) {
  return gs_ag_to_ex(x, dev, dt, false, out);
}

gs_status gs_ag_to_ex(gs_tensor *x, gs_device dev, gs_dtype dt, bool non_blocking, gs_tensor **out) {
  GS_TRY(gs_to_ex(x, dev, dt, non_blocking, out));
  if (*out == x || !gs_grad_enabled || !gs_requires_grad(x) || !gs_dtype_is_float(dt)) return GS_OK;
  gs_node *n = gs_node_new("ToCopyBackward0", bw_to, 1, &x);
  return gs_ag_record(n, out, GS_OK);
}

static gs_status bw_clone(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_tensor_retain(g);
  *gr = g;
  return GS_OK;
}

gs_status gs_ag_clone(gs_tensor *x, gs_tensor **out) {
  GS_TRY(gs_clone(x, out));
  if (!gs_grad_enabled || !gs_requires_grad(x)) return GS_OK;
  gs_node *n = gs_node_new("CloneBackward0", bw_clone, 1, &x);
  return gs_ag_record(n, out, GS_OK);
}

gs_status gs_ag_pin_memory(gs_tensor *x, gs_tensor **out) {
  if (!gs_tensor_on_cpu(x)) {
    char dev[32];
    gs_device_name(gs_tensor_device(x), dev, sizeof dev);
    return gs_error("pin_memory: only CPU tensors can be pinned, this one is on %s", dev);
  }
  if (x->buf->pinned) { gs_tensor_retain(x); *out = x; return GS_OK; }
  GS_TRY(gs_ag_clone(x, out));
  (*out)->buf->pinned = true;
  return GS_OK;
}

/* ---- cat / stack: each input gets its slice of g ---- */

static gs_status bw_join(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  int dim = (int)n->ints[0];
  bool stack = n->ints[1];
  int64_t at = 0;
  for (int i = 0; i < n->ninputs; i++) {
    gs_status s;
    if (stack) s = gs_select(g, dim, i, &gr[i]);
    else {
      int64_t len = n->in_ndim[i] == 1 && n->in_shape[i][0] == 0 ? 0 : n->in_shape[i][dim];
      if (len == 0 && n->in_ndim[i] == 1) continue;
      s = gs_narrow(g, dim, at, len, &gr[i]);
      at += len;
    }
    if (s != GS_OK) return s;
  }
  return GS_OK;
}

/* Length along dim that input x takes in a cat (a 1-d empty tensor is
 * skipped) or in a stack (one slot). */
static int64_t join_len(const gs_tensor *x, int dim, bool stack) {
  if (stack) return 1;
  return x->ndim == 1 && x->shape[0] == 0 ? 0 : x->shape[dim];
}

/* A node has at most GS_AG_MAX_IN inputs: a join of more is recorded as a
 * tree of join nodes over consecutive groups. Each group's node is
 * attached to a view of the result (used only for its shape and grad_fn),
 * and the node above routes g to those views as a cat would. */
static gs_status record_join(gs_tensor **xs, int n, int dim, bool stack, const char *name, gs_tensor *out) {
  bool any = false;
  for (int i = 0; i < n; i++) any = any || gs_requires_grad(xs[i]);
  if (!any) return GS_OK;
  if (n <= GS_AG_MAX_IN) {
    gs_node *nd = gs_node_new(name, bw_join, n, xs);
    if (nd) { nd->ints[0] = dim; nd->ints[1] = stack; }
    return gs_ag_attach(nd, out, GS_OK);
  }
  gs_tensor *parts[GS_AG_MAX_IN] = {NULL};
  int per = (n + GS_AG_MAX_IN - 1) / GS_AG_MAX_IN, ngroups = 0;
  int64_t at = 0;
  gs_status s = GS_OK;
  for (int g = 0; g * per < n && s == GS_OK; g++) {
    int first = g * per, count = n - first < per ? n - first : per;
    int64_t len = 0;
    for (int i = first; i < first + count; i++) len += join_len(xs[i], dim, stack);
    s = gs_narrow(out, dim, at, len, &parts[g]);
    if (s == GS_OK) {
      ngroups++;
      s = record_join(xs + first, count, dim, stack, name, parts[g]);
    }
    at += len;
  }
  if (s == GS_OK) {
    /* the groups' views are joined along dim as a cat */
    gs_node *nd = gs_node_new(name, bw_join, ngroups, parts);
    if (nd) { nd->ints[0] = dim; nd->ints[1] = 0; }
    s = gs_ag_attach(nd, out, GS_OK);
  }
  for (int g = 0; g < ngroups; g++) REL(parts[g]);
  return s;
}

gs_status gs_ag_join(gs_tensor **xs, int n, int dim, bool stack, gs_tensor **out) {
  GS_TRY(stack ? gs_stack(xs, n, dim, out) : gs_cat(xs, n, dim, out));
  if (!gs_grad_enabled || !gs_dtype_is_float((*out)->dtype)) return GS_OK;
  if (dim < 0) dim += (*out)->ndim;
  gs_status s = record_join(xs, n, dim, stack, stack ? "StackBackward0" : "CatBackward0", *out);
  if (s != GS_OK) { REL(*out); *out = NULL; }
  return s;
}
