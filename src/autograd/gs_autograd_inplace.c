/* gs_autograd_inplace.c: what autograd decides about tensors the user
 * holds: in-place ops (recorded as PyTorch records them, refused where it
 * refuses, see gs_ag_check_inplace) and a leaf's flags (requires_grad, detach_,
 * parameters). Bindings call these, never the plain in-place ops, so a
 * new binding cannot forget the guard. The write itself runs with Ctrl-C
 * held off (gs_common.h): it finishes rather than stop halfway through a
 * tensor the caller holds. */
#include <string.h>
#include "autograd/gs_autograd.h"

#define UNINTERRUPTED(call) (gs_hold_begin(), release_hold(call))
static gs_status release_hold(gs_status s) {
  gs_hold_end();
  return s;
}

/* ---- in-place ops inside the graph ----
 * The op runs out of place first, recorded as usual (its node's input is
 * x as it was), and the result is written into x; x takes the node as its
 * grad_fn. What the node saved of x's old values is copied before the
 * write (PyTorch saves original values of an in-place op's self), and
 * what it saved of the result is re-pointed at x, whose version the
 * write moves on: a later in-place change of x is then refused at
 * backward, as PyTorch refuses it. A write into a view of a base gives the
 * base a CopySlices node: the base's gradient outside the view passes
 * through, inside it goes through the op's node. */

typedef enum { IP_UNARY, IP_BINARY, IP_SCALAR, IP_FILL, IP_FILL_T, IP_COPY, IP_UNIFORM, IP_NORMAL } ip_kind;
typedef struct {
  ip_kind kind;
  int op;
  const double *args;
  gs_tensor *b;     /* the tensor operand */
  gs_scalar s;
  double lo, hi;
} ip_op;

static gs_status run_plain(const ip_op *o, gs_tensor *x) {
  switch (o->kind) {
  case IP_UNARY: return gs_unary_((gs_unary_op)o->op, x, o->args);
  case IP_BINARY: return gs_binary_((gs_binary_op)o->op, x, o->b);
  case IP_SCALAR: return gs_binary_scalar_((gs_binary_op)o->op, x, o->s);
  case IP_FILL: return gs_fill_(x, o->s);
  case IP_FILL_T: return gs_fill_tensor_(x, o->b);
  case IP_COPY: return gs_copy_(x, o->b);
  case IP_UNIFORM: return gs_uniform_(x, o->lo, o->hi);
  default: return gs_normal_(x, o->lo, o->hi);
  }
}

/* the ops that overwrite x: no gradient to x's old values; fill_ and
 * copy_ from a tensor send g to it (summed to its shape by the pass) */
static gs_status bw_none(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  (void)n; (void)g; (void)gr;
  return GS_OK;
}
static gs_status bw_operand(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  return gs_to(g, n->in_device[1], n->in_dtype[1], &gr[1]);
}

/* The op out of place on `in`, recorded (a node even for an op without a
 * gradient: it cuts the path to x's old values). */
static gs_status run_recorded(const ip_op *o, gs_tensor *in, gs_tensor **r) {
  gs_status s;
  const char *name = "CopyBackwards";
  gs_backward_fn bw = bw_none;
  switch (o->kind) {
  case IP_UNARY: s = gs_ag_unary((gs_unary_op)o->op, in, o->args, r); break;
  case IP_BINARY: s = gs_ag_binary((gs_binary_op)o->op, in, o->b, r); break;
  case IP_SCALAR: s = gs_ag_binary_scalar((gs_binary_op)o->op, in, o->s, false, r); break;
  default:
    s = gs_tensor_empty(gs_tensor_device(in), in->dtype, in->ndim, in->shape, r);
    if (s == GS_OK) s = run_plain(o, *r);
    if (s != GS_OK) { gs_tensor_release(*r); *r = NULL; }
    name = o->kind == IP_FILL ? "FillBackward0" : o->kind == IP_FILL_T ? "FillBackward1"
         : o->kind == IP_UNIFORM ? "UniformBackward0" : o->kind == IP_NORMAL ? "NormalBackward0" : name;
    bw = o->b ? bw_operand : bw_none;
    break;
  }
  if (s != GS_OK || (*r)->grad_fn) return s;
  gs_tensor *ins[2] = {in, o->b};
  return gs_ag_record(gs_node_new(name, bw, o->b ? 2 : 1, ins), r, GS_OK);
}

/* The node's saved copies of x's storage become private copies of the
 * values they hold now, before x is written. */
static gs_status unshare_saved(gs_node *n, const gs_buffer *buf) {
  for (int i = 0; i < GS_AG_MAX_SAVED; i++) {
    gs_tensor *t = n->saved[i], *c;
    if (!t || t->buf != buf) continue;
    GS_TRY(gs_clone(t, &c));
    gs_tensor_release(t);
    n->saved[i] = c;
    n->saved_version[i] = c->buf->version;
  }
  return GS_OK;
}

/* What the node saved of its result r now refers to x, which holds it. */
static gs_status rebind_saved(gs_node *n, const gs_tensor *r, const gs_tensor *x) {
  for (int i = 0; i < GS_AG_MAX_SAVED; i++) {
    if (!n->saved[i] || n->saved[i]->buf != r->buf) continue;
    gs_tensor *v = gs_tensor_view_of(x, x->ndim, x->shape, x->stride, x->offset);
    if (!v) return gs_error_code(GS_ERR_OOM, "out of host memory");
    gs_tensor_release(n->saved[i]);
    n->saved[i] = v;
    n->saved_version[i] = x->buf->version;
    n->saved_of[i] = n->name;
    n->saved_out[i] = true;
  }
  return GS_OK;
}

static void set_grad_fn(gs_tensor *x, gs_node *n) {
  gs_grad_fn_release(x->grad_fn);
  x->grad_fn = n;
  x->requires_grad = true;
}

/* x not a view (or not one of a base in the graph): x <- op(x) */
static gs_status inplace_plain_base(gs_tensor *x, const ip_op *o) {
  gs_tensor *r = NULL;
  GS_TRY(run_recorded(o, x, &r));
  gs_node *n = r->grad_fn;
  gs_status s = unshare_saved(n, x->buf);
  bool rebind = r->dtype == x->dtype;
  if (s == GS_OK && !rebind) { /* x keeps its dtype: the cast is part of the graph */
    gs_tensor *c;
    s = gs_ag_to(r, gs_tensor_device(x), x->dtype, &c);
    if (s == GS_OK) { gs_tensor_release(r); r = c; }
  }
  if (s == GS_OK) s = UNINTERRUPTED(gs_copy_(x, r));
  if (s == GS_OK && rebind) s = rebind_saved(n, r, x);
  if (s == GS_OK) {
    r->grad_fn->refcount++;
    set_grad_fn(x, r->grad_fn);
    x->buf->writer = r->grad_fn->name;
  }
  gs_tensor_release(r);
  return s;
}

/* the base's gradient g: outside the view it passes to the base's old
 * values, inside it goes through the op's node (c->inner), whose other
 * inputs are c's inputs 1.. */
static gs_status bw_copy_slices(gs_node *c, gs_tensor *g, gs_tensor **grads) {
  gs_node *op = c->inner;
  gs_tensor *gb = NULL, *region = NULL, *gr = NULL, *ig[GS_AG_MAX_IN] = {NULL};
  gs_status s = gs_node_check_saved(op);
  if (s == GS_OK) s = gs_clone(g, &gb);
  if (s == GS_OK && !(region = gs_tensor_view_of(gb, c->r_ndim, c->r_shape, c->r_stride, c->r_offset)))
    s = gs_error_code(GS_ERR_OOM, "out of host memory");
  if (s == GS_OK) s = gs_to(region, gs_tensor_device(region), (gs_dtype)c->ints[0], &gr);
  if (s == GS_OK && gr == region) { gs_tensor_release(gr); s = gs_clone(region, &gr); }
  if (s == GS_OK) s = op->backward(op, gr, ig);
  if (s == GS_OK && ig[0]) {
    gs_tensor *r0;
    s = gs_sum_to(ig[0], op->in_ndim[0], op->in_shape[0], &r0);
    if (s == GS_OK) { s = gs_copy_(region, r0); gs_tensor_release(r0); }
  } else if (s == GS_OK) s = gs_fill_(region, gs_scalar_i(0));
  if (s == GS_OK) { grads[0] = gb; gb = NULL; }
  for (int i = 1; i < c->ninputs && s == GS_OK; i++) { grads[i] = ig[i]; ig[i] = NULL; }
  for (int i = 0; i < GS_AG_MAX_IN; i++) gs_tensor_release(ig[i]);
  gs_tensor_release(gr);
  gs_tensor_release(region);
  gs_tensor_release(gb);
  return s;
}

/* a view's gradient after the write: zeros of the base's shape with g in
 * the view's region */
gs_status gs_bw_as_strided(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_tensor *z, *region;
  GS_TRY(gs_full(gs_tensor_device(g), g->dtype, n->in_ndim[0], n->in_shape[0], gs_scalar_i(0), &z));
  region = gs_tensor_view_of(z, n->r_ndim, n->r_shape, n->r_stride, n->r_offset);
  gs_status s = region ? gs_copy_(region, g) : gs_error_code(GS_ERR_OOM, "out of host memory");
  gs_tensor_release(region);
  if (s == GS_OK) *gr = z; else gs_tensor_release(z);
  return s;
}

void gs_ag_set_region(gs_node *n, const gs_tensor *x, const gs_tensor *base) {
  n->r_ndim = x->ndim;
  memcpy(n->r_shape, x->shape, sizeof x->shape);
  memcpy(n->r_stride, x->stride, sizeof x->stride);
  n->r_offset = x->offset - base->offset;
}

/* x a view of base, written in place while something requires grad */
static gs_status inplace_view(gs_tensor *x, gs_tensor *base, const ip_op *o) {
  if (!gs_is_contiguous(base))
    return gs_error("in-place operation on a view of a non-contiguous tensor that is part of an autograd graph is "
                    "not supported; write into base:contiguous() or use the out-of-place form");
  for (int d = 0; d < x->ndim; d++)
    if (x->stride[d] == 0 && x->shape[d] > 1)
      return gs_error("unsupported operation: more than one element of the written-to tensor refers to a single "
                      "memory location. Please clone() the tensor before performing the operation.");
  /* the op's node sees the view's values as an input of its own, with no
   * edge: the CopySlices node is what connects it to the base */
  gs_tensor *in = gs_tensor_view_of(x, x->ndim, x->shape, x->stride, x->offset), *r = NULL;
  if (!in) return gs_error_code(GS_ERR_OOM, "out of host memory");
  in->requires_grad = true;
  gs_status s = run_recorded(o, in, &r);
  gs_tensor_release(in);
  if (s != GS_OK) return s;
  gs_node *op = r->grad_fn;
  gs_tensor_release(op->next_leaf[0]);
  op->next_leaf[0] = NULL;
  gs_node *c = gs_node_new("CopySlices", bw_copy_slices, 1, &base);
  gs_node *v = c ? gs_node_new("AsStridedBackward0", gs_bw_as_strided, 1, &base) : NULL;
  s = c && v ? unshare_saved(op, x->buf) : gs_error_code(GS_ERR_OOM, "out of memory recording autograd");
  if (s == GS_OK) s = UNINTERRUPTED(gs_copy_(x, r));
  if (s == GS_OK && r->dtype == x->dtype) s = rebind_saved(op, r, x);
  if (s == GS_OK) {
    /* the op's other inputs become the CopySlices node's */
    c->ninputs = op->ninputs;
    for (int i = 1; i < op->ninputs; i++) {
      c->next_fn[i] = op->next_fn[i];
      c->next_leaf[i] = op->next_leaf[i];
      op->next_fn[i] = NULL;
      op->next_leaf[i] = NULL;
      c->in_ndim[i] = op->in_ndim[i];
      memcpy(c->in_shape[i], op->in_shape[i], sizeof c->in_shape[i]);
      c->in_dtype[i] = op->in_dtype[i];
      c->in_device[i] = op->in_device[i];
    }
    c->inner = op;
    op->refcount++;
    c->ints[0] = r->dtype;
    gs_ag_set_region(c, x, base);
    set_grad_fn(base, c);
    base->buf->writer = c->name;
    /* the view's own grad_fn now reads its part of the base's */
    c->refcount++;
    gs_grad_fn_release(v->next_fn[0]); /* made before base's grad_fn became c */
    v->next_fn[0] = c;
    gs_tensor_release(v->next_leaf[0]);
    v->next_leaf[0] = NULL;
    v->is_view = true;
    gs_ag_set_region(v, x, base);
    set_grad_fn(x, v);
    x->view_version = x->buf->version;
    c = v = NULL;
  }
  gs_grad_fn_release(c);
  gs_grad_fn_release(v);
  gs_tensor_release(r);
  return s;
}

/* The guard, then the plain op, or the recorded one when grad is wanted. */
static gs_status ag_inplace(gs_tensor *x, const ip_op *o) {
  GS_TRY(gs_ag_check_inplace(x));
  gs_tensor *base = x->base && x->base->buf == x->buf ? x->base : NULL;
  bool wants = gs_grad_enabled && gs_dtype_is_float(x->dtype) &&
               (gs_requires_grad(x) || (base && gs_requires_grad(base)) || (o->b && gs_requires_grad(o->b)));
  if (!wants) return UNINTERRUPTED(run_plain(o, x));
  /* a .grad in a graph could hold its own leaf (w.grad:add_(w)): a cycle */
  if (x->is_grad || (base && base->is_grad))
    return gs_error("in-place operation on a .grad with an operand that requires grad: a .grad must not be part of "
                    "an autograd graph; detach the operand (or do it under torch.no_grad())");
  return base ? inplace_view(x, base, o) : inplace_plain_base(x, o);
}

gs_status gs_ag_unary_(gs_unary_op op, gs_tensor *x, const double *args) {
  ip_op o = {.kind = IP_UNARY, .op = op, .args = args};
  return ag_inplace(x, &o);
}

gs_status gs_ag_binary_(gs_binary_op op, gs_tensor *a, const gs_tensor *b) {
  ip_op o = {.kind = IP_BINARY, .op = op, .b = (gs_tensor *)b};
  return ag_inplace(a, &o);
}

gs_status gs_ag_binary_scalar_(gs_binary_op op, gs_tensor *a, gs_scalar s) {
  ip_op o = {.kind = IP_SCALAR, .op = op, .s = s};
  return ag_inplace(a, &o);
}

gs_status gs_ag_fill_(gs_tensor *x, gs_scalar v) {
  GS_TRY(gs_scalar_fits(x->dtype, v)); /* x:fill_(300) and x[i] = 300 on int8 */
  ip_op o = {.kind = IP_FILL, .s = v};
  return ag_inplace(x, &o);
}

gs_status gs_ag_fill_tensor_(gs_tensor *x, const gs_tensor *v) {
  ip_op o = {.kind = IP_FILL_T, .b = (gs_tensor *)v};
  return ag_inplace(x, &o);
}

gs_status gs_ag_copy_(gs_tensor *dst, const gs_tensor *src) {
  ip_op o = {.kind = IP_COPY, .b = (gs_tensor *)src};
  return ag_inplace(dst, &o);
}

gs_status gs_ag_uniform_(gs_tensor *x, double lo, double hi) {
  ip_op o = {.kind = IP_UNIFORM, .lo = lo, .hi = hi};
  return ag_inplace(x, &o);
}

gs_status gs_ag_normal_(gs_tensor *x, double mean, double std) {
  ip_op o = {.kind = IP_NORMAL, .lo = mean, .hi = std};
  return ag_inplace(x, &o);
}

/* ---- a leaf's flags ---- */

/* A view that becomes a leaf requiring grad (v.requires_grad = true,
 * nn.Parameter(v)) stops being tracked as a view: its base's nodes may
 * come to hold it (Y[2] = v * 3), and its base link would close a cycle. */
static void drop_base(gs_tensor *x) {
  gs_tensor_release(x->base);
  x->base = NULL;
}

gs_status gs_ag_set_requires_grad(gs_tensor *x, bool on) {
  if (on && !gs_dtype_is_float(x->dtype))
    return gs_error("only Tensors of floating point dtype can require gradients (got %s)", gs_dtype_name(x->dtype));
  if (!on && x->grad_fn)
    return gs_error("you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var:detach().");
  x->requires_grad = on;
  if (on && !x->grad_fn) drop_base(x);
  return GS_OK;
}

gs_status gs_ag_detach_(gs_tensor *x) {
  if (x->grad_fn) { gs_grad_fn_release(x->grad_fn); x->grad_fn = NULL; }
  x->requires_grad = false;
  return GS_OK;
}

gs_status gs_ag_make_parameter(gs_tensor *x, bool requires_grad) {
  if (!gs_dtype_is_float(x->dtype))
    return gs_error("nn.Parameter: only floating point tensors can be parameters (got %s)", gs_dtype_name(x->dtype));
  if (x->grad_fn) return gs_error("nn.Parameter: expected a leaf tensor; use t:detach() first");
  x->is_param = true;
  x->requires_grad = requires_grad;
  drop_base(x);
  return GS_OK;
}

gs_status gs_ag_set_grad_hook(gs_tensor *x, bool on) {
  if (on && (x->grad_fn || !x->requires_grad))
    return gs_error("post accumulate grad hooks cannot be registered on non-leaf tensors or tensors that do "
                    "not require grad");
  x->has_grad_hook = on;
  return GS_OK;
}

/* PyTorch lets x.data = y change x's shape, dtype and device (nn's
 * Module:to() moves parameters that way), but a tensor that requires grad
 * keeps a floating dtype. Views of x and what autograd saved keep the old
 * storage: they are tensors of their own. */
gs_status gs_ag_set_data(gs_tensor *x, const gs_tensor *y) {
  if (x->requires_grad && !gs_dtype_is_float(y->dtype))
    return gs_error("data set to a tensor that requires gradients must be floating point, got %s",
                    gs_dtype_name(y->dtype));
  gs_buffer_retain(y->buf);
  gs_buffer_release(x->buf);
  x->buf = y->buf;
  x->dtype = y->dtype;
  x->ndim = y->ndim;
  memcpy(x->shape, y->shape, sizeof x->shape);
  memcpy(x->stride, y->stride, sizeof x->stride);
  x->offset = y->offset;
  return GS_OK;
}

/* Whether x is reachable from g through .grad and a view's base (which
 * the view holds), or g holds a base inside a graph (whose nodes may hold
 * x): x.grad = g would then make a reference cycle, never freed. A base
 * is never a view, so the recursion goes one base deeper each time. */
static bool holds(const gs_tensor *g, const gs_tensor *x, int depth) {
  for (const gs_tensor *t = g; t; t = t->grad) {
    if (t == x) return true;
    const gs_tensor *b = t->base;
    if (b && (depth > 32 || b->grad_fn || holds(b, x, depth + 1))) return true;
  }
  return false;
}

static gs_status check_no_cycle(const gs_tensor *x, const gs_tensor *g) {
  for (const gs_tensor *t = g->grad; t; t = t->grad)
    if (t == x) return gs_error("assigned grad would make a cycle: the tensor is reachable through the grad's own .grad");
  if (holds(g, x, 0))
    return gs_error("assigned grad is a view of the tensor itself or of a tensor in an autograd graph (a view holds "
                    "its base, so this would make a reference cycle); assign g:clone() instead");
  return GS_OK;
}

gs_status gs_ag_set_grad(gs_tensor *x, gs_tensor *g) {
  if (g) {
    if (g == x) return gs_error("can't assign Variable as its own grad");
    if (g->dtype != x->dtype)
      return gs_error("assigned grad has data of a different type: the tensor is %s, the grad %s",
                      gs_dtype_name(x->dtype), gs_dtype_name(g->dtype));
    gs_device dx = gs_tensor_device(x), dg = gs_tensor_device(g);
    if (dx.type != dg.type || dx.index != dg.index) {
      char a[16], b[16];
      gs_device_name(dx, a, sizeof a);
      gs_device_name(dg, b, sizeof b);
      return gs_error("assigned grad has data located on a different device: the tensor is on %s, the grad on %s", a, b);
    }
    if (g->ndim != x->ndim || memcmp(g->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0) {
      char a[128], b[128];
      gs_shape_str(x, a, sizeof a);
      gs_shape_str(g, b, sizeof b);
      return gs_error("assigned grad has data of a different size: the tensor is %s, the grad %s", a, b);
    }
    /* A graph holds its leaves: a .grad with a grad_fn can lead back to x,
     * and a reference cycle is never freed. */
    if (g->grad_fn)
      return gs_error("assigned grad has a grad_fn (%s): a .grad must not be part of an autograd graph; assign "
                      "g:detach() instead", gs_grad_fn_name(g->grad_fn));
    GS_TRY(check_no_cycle(x, g));
    gs_tensor_retain(g);
  }
  if (x->grad) x->grad->is_grad = false;
  gs_tensor_release(x->grad);
  x->grad = g;
  if (g) g->is_grad = true;
  return GS_OK;
}
