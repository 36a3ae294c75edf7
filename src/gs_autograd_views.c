/* gs_autograd_views.c: gradients through views (reshape, transpose,
 * select, slice, expand, ...), device/dtype moves, clone, cat and stack.
 * A view's gradient is routed back to the input's shape: inverse
 * permutations, zeros with the selected part filled, or sums over
 * expanded dims. */
#include <string.h>
#include "gs_autograd.h"

#define REL(t) gs_tensor_release(t)

static gs_status finish(gs_node *n, gs_tensor *out, gs_status s) {
  if (!n) return gs_error_code(GS_ERR_OOM, "out of memory recording autograd");
  if (s != GS_OK) { gs_grad_fn_release(n); return s; }
  gs_node_attach(n, out);
  return GS_OK;
}

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

static gs_status bw_view(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  const char *name = n->name;
  if (strcmp(name, "SelectBackward0") == 0) return scatter_into_zeros(n, g, gr, true);
  if (strcmp(name, "SliceBackward0") == 0) return scatter_into_zeros(n, g, gr, false);
  if (strcmp(name, "ExpandBackward0") == 0) return gs_sum_to(g, n->in_ndim[0], n->in_shape[0], gr);
  if (strcmp(name, "PermuteBackward0") == 0) {
    int inv[GS_MAX_DIMS];
    for (int i = 0; i < n->nints; i++) inv[n->ints[i]] = i;
    return gs_permute(g, inv, gr);
  }
  if (strcmp(name, "TransposeBackward0") == 0 || strcmp(name, "TBackward0") == 0)
    return gs_transpose(g, (int)n->ints[0], (int)n->ints[1], gr);
  /* view, reshape, unsqueeze, squeeze, flatten: back to the input's shape */
  return gs_reshape(g, n->in_ndim[0], n->in_shape[0], gr);
}

gs_status gs_ag_record_view(const char *kind, gs_tensor *x, gs_tensor *y, const int64_t *ints, int nints) {
  if (!gs_grad_enabled || !gs_requires_grad(x)) return GS_OK;
  static const struct { const char *kind, *name; } names[] = {
    {"view", "ViewBackward0"}, {"t", "TBackward0"}, {"transpose", "TransposeBackward0"},
    {"permute", "PermuteBackward0"}, {"unsqueeze", "UnsqueezeBackward0"}, {"squeeze", "SqueezeBackward0"},
    {"select", "SelectBackward0"}, {"slice", "SliceBackward0"}, {"expand", "ExpandBackward0"},
    {"reshape", "ViewBackward0"}, {"flatten", "ViewBackward0"}};
  const char *name = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i].kind, kind) == 0) name = names[i].name;
  if (!name) return gs_error("internal: unknown view kind '%s'", kind);
  gs_node *n = gs_node_new(name, bw_view, 1, &x);
  if (n) {
    n->nints = nints;
    if (nints) memcpy(n->ints, ints, sizeof(int64_t) * (size_t)nints);
  }
  return finish(n, y, GS_OK);
}

/* ---- to / clone ---- */

static gs_status bw_to(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  return gs_to(g, n->in_device[0], n->in_dtype[0], gr);
}

gs_status gs_ag_to(gs_tensor *x, gs_device dev, gs_dtype dt, gs_tensor **out) {
  GS_TRY(gs_to(x, dev, dt, out));
  if (*out == x || !gs_grad_enabled || !gs_requires_grad(x) || !gs_dtype_is_float(dt)) return GS_OK;
  gs_node *n = gs_node_new("ToCopyBackward0", bw_to, 1, &x);
  gs_status s = finish(n, *out, GS_OK);
  if (s != GS_OK) { REL(*out); *out = NULL; }
  return s;
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
  gs_status s = finish(n, *out, GS_OK);
  if (s != GS_OK) { REL(*out); *out = NULL; }
  return s;
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
    return finish(nd, out, GS_OK);
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
    s = finish(nd, out, GS_OK);
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
