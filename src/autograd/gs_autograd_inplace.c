/* gs_autograd_inplace.c: what autograd decides about tensors the user
 * holds: in-place ops (each refused when it would corrupt the graph, see
 * gs_ag_check_inplace) and a leaf's flags (requires_grad, detach_,
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

gs_status gs_ag_check_inplace_src(const gs_tensor *x, const gs_tensor *src) {
  GS_TRY(gs_ag_check_inplace(x));
  if (gs_grad_enabled && src && gs_requires_grad(src))
    return gs_error("in-place operations whose operand requires grad are not supported: the result would not carry "
                    "its gradient; use the out-of-place form (e.g. x = x + y instead of x:add_(y)), or detach the "
                    "operand");
  return GS_OK;
}

gs_status gs_ag_unary_(gs_unary_op op, gs_tensor *x, const double *args) {
  GS_TRY(gs_ag_check_inplace(x));
  return UNINTERRUPTED(gs_unary_(op, x, args));
}

gs_status gs_ag_binary_(gs_binary_op op, gs_tensor *a, const gs_tensor *b) {
  GS_TRY(gs_ag_check_inplace_src(a, b));
  return UNINTERRUPTED(gs_binary_(op, a, b));
}

gs_status gs_ag_binary_scalar_(gs_binary_op op, gs_tensor *a, gs_scalar s) {
  GS_TRY(gs_ag_check_inplace(a));
  return UNINTERRUPTED(gs_binary_scalar_(op, a, s));
}

gs_status gs_ag_fill_(gs_tensor *x, gs_scalar v) {
  GS_TRY(gs_ag_check_inplace(x));
  GS_TRY(gs_scalar_fits(x->dtype, v)); /* x:fill_(300) and x[i] = 300 on int8 */
  return UNINTERRUPTED(gs_fill_(x, v));
}

gs_status gs_ag_fill_tensor_(gs_tensor *x, const gs_tensor *v) {
  GS_TRY(gs_ag_check_inplace_src(x, v));
  return UNINTERRUPTED(gs_fill_tensor_(x, v));
}

gs_status gs_ag_copy_(gs_tensor *dst, const gs_tensor *src) {
  GS_TRY(gs_ag_check_inplace_src(dst, src));
  return UNINTERRUPTED(gs_copy_(dst, src));
}

gs_status gs_ag_uniform_(gs_tensor *x, double lo, double hi) {
  GS_TRY(gs_ag_check_inplace(x));
  return UNINTERRUPTED(gs_uniform_(x, lo, hi));
}

gs_status gs_ag_normal_(gs_tensor *x, double mean, double std) {
  GS_TRY(gs_ag_check_inplace(x));
  return UNINTERRUPTED(gs_normal_(x, mean, std));
}

/* ---- a leaf's flags ---- */

gs_status gs_ag_set_requires_grad(gs_tensor *x, bool on) {
  if (on && !gs_dtype_is_float(x->dtype))
    return gs_error("only Tensors of floating point dtype can require gradients (got %s)", gs_dtype_name(x->dtype));
  if (!on && x->grad_fn)
    return gs_error("you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var:detach().");
  x->requires_grad = on;
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
    for (const gs_tensor *t = g->grad; t; t = t->grad)
      if (t == x) return gs_error("assigned grad would make a cycle: the tensor is reachable through the grad's own .grad");
    gs_tensor_retain(g);
  }
  gs_tensor_release(x->grad);
  x->grad = g;
  return GS_OK;
}
