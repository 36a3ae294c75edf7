/* gs_autograd.c: the graph and the backward pass. Nodes are refcounted:
 * a tensor holds its grad_fn, a node holds the grad_fns of its inputs and
 * the leaves it accumulates into. backward() orders the reachable nodes
 * topologically (Kahn), runs each node once with its summed incoming
 * gradient, and accumulates into leaves' .grad. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/gs_autograd.h"

bool gs_grad_enabled = true;
gs_status (*gs_grad_ready_hook)(gs_tensor *leaf) = NULL;
gs_status (*gs_backward_end_hook)(bool ok) = NULL;

const char *gs_grad_fn_name(const gs_node *n) { return n ? n->name : ""; }

static bool stale_view(const gs_tensor *t) {
  return t->base && t->base->buf == t->buf && t->view_version != t->buf->version && t->base->grad_fn;
}

/* a view whose base joined the graph through an in-place write since the
 * view was taken requires grad too (gs_ag_refresh_view) */
bool gs_requires_grad(const gs_tensor *t) { return t && (t->requires_grad || t->grad_fn || stale_view(t)); }

void gs_ag_refresh_view(gs_tensor *x) {
  if (!stale_view(x) || !gs_is_contiguous(x->base)) return;
  gs_node *v = gs_node_new("AsStridedBackward0", gs_bw_as_strided, 1, &x->base);
  if (!v) return; /* out of memory: the old grad_fn stays */
  gs_ag_set_region(v, x, x->base);
  v->is_view = true;
  gs_grad_fn_release(x->grad_fn);
  x->grad_fn = v;
  x->requires_grad = true;
  x->view_version = x->buf->version;
}

void gs_grad_fn_release(gs_node *n) {
  if (!n || --n->refcount > 0) return;
  gs_release_dead(n, true);
}

/* Called by gs_release_dead once nothing refers to n. */
void gs_node_destroy(gs_node *n) {
  for (int i = 0; i < n->ninputs; i++) {
    gs_grad_fn_release(n->next_fn[i]);
    gs_tensor_release(n->next_leaf[i]);
  }
  for (int i = 0; i < GS_AG_MAX_SAVED; i++) gs_tensor_release(n->saved[i]);
  gs_tensor_release(n->acc);
  if (n->inner) gs_grad_fn_release(n->inner);
  free(n);
}

/* The core frees tensors holding nodes through these hooks. Installed when
 * the library is loaded, before any thread starts or any node is made. */
__attribute__((constructor)) static void install_node_hooks(void) {
  gs_node_release_hook = gs_grad_fn_release;
  gs_node_destroy_hook = gs_node_destroy;
}

gs_node *gs_node_new(const char *name, gs_backward_fn fn, int ninputs, gs_tensor *const *inputs) {
  gs_node *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->refcount = 1;
  n->name = name;
  n->backward = fn;
  n->ninputs = ninputs;
  for (int i = 0; i < ninputs; i++) {
    gs_tensor *x = inputs[i];
    if (!x) continue;
    gs_ag_refresh_view(x);
    n->in_ndim[i] = x->ndim;
    memcpy(n->in_shape[i], x->shape, sizeof(int64_t) * (size_t)x->ndim);
    n->in_dtype[i] = x->dtype;
    n->in_device[i] = gs_tensor_device(x);
    if (x->grad_fn) { n->next_fn[i] = x->grad_fn; x->grad_fn->refcount++; }
    else if (x->requires_grad) { n->next_leaf[i] = x; gs_tensor_retain(x); }
  }
  return n;
}

/* Saved tensors are fresh headers over the same storage, without a
 * grad_fn: saving an op's own output creates no cycle. */
gs_status gs_node_save(gs_node *n, int slot, const gs_tensor *t) {
  gs_tensor *v = gs_tensor_view_of(t, t->ndim, t->shape, t->stride, t->offset);
  if (!v) return gs_error_code(GS_ERR_OOM, "out of host memory");
  n->saved[slot] = v;
  n->saved_version[slot] = t->buf->version;
  n->saved_of[slot] = t->grad_fn ? t->grad_fn->name : NULL;
  return GS_OK;
}

/* PyTorch's type names: torch.FloatTensor, torch.cuda.DoubleTensor, ... */
static const char *type_name(gs_dtype dt) {
  switch (dt) {
  case GS_FLOAT64: return "Double";
  case GS_FLOAT16: return "Half";
  case GS_BFLOAT16: return "BFloat16";
  default: return "Float";
  }
}

gs_status gs_node_check_saved(const gs_node *n) {
  for (int i = 0; i < GS_AG_MAX_SAVED; i++) {
    const gs_tensor *t = n->saved[i];
    if (!t || t->buf->version == n->saved_version[i]) continue;
    char shape[160], of[128] = "";
    gs_shape_str(t, shape, sizeof shape);
    /* PyTorch names a saved output's maker, and a saved input's grad_fn
     * as it is now: the one its last recorded in-place write gave it */
    const char *maker = !n->saved_out[i] && n->saved_of[i] && t->buf->writer ? t->buf->writer : n->saved_of[i];
    if (maker) snprintf(of, sizeof of, ", which is output 0 of %s,", maker);
    return gs_error("one of the variables needed for gradient computation has been modified by an inplace "
                    "operation: [torch.%s%sTensor %s]%s is at version %llu; expected version %llu instead. Hint: "
                    "the tensor was changed in place after %s saved it; change a copy (x:clone()) or use the "
                    "out-of-place form", gs_tensor_on_cpu(t) ? "" : "cuda.", type_name(t->dtype), shape, of,
                    (unsigned long long)t->buf->version, (unsigned long long)n->saved_version[i], n->name);
  }
  return GS_OK;
}

void gs_node_attach(gs_node *n, gs_tensor *out) {
  if (out->grad_fn) gs_grad_fn_release(out->grad_fn);
  out->grad_fn = n;
  out->requires_grad = true;
}

bool gs_ag_wants(gs_tensor *const *xs, int n) {
  if (!gs_grad_enabled) return false;
  for (int i = 0; i < n; i++) if (xs[i] && gs_requires_grad(xs[i])) return true;
  return false;
}

gs_status gs_ag_attach(gs_node *n, gs_tensor *out, gs_status s) {
  if (!n) return gs_error_code(GS_ERR_OOM, "out of memory recording autograd");
  if (s != GS_OK) { gs_grad_fn_release(n); return s; }
  /* what the node saved of its own output was made by the node itself */
  for (int i = 0; i < GS_AG_MAX_SAVED; i++)
    if (n->saved[i] && !n->saved_of[i] && n->saved[i]->buf == out->buf) {
      n->saved_of[i] = n->name;
      n->saved_out[i] = true;
    }
  gs_node_attach(n, out);
  return GS_OK;
}

gs_status gs_ag_record(gs_node *n, gs_tensor **out, gs_status s) {
  s = gs_ag_attach(n, *out, s);
  if (s != GS_OK) {
    gs_tensor_release(*out);
    *out = NULL;
  }
  return s;
}

gs_status gs_detach(const gs_tensor *x, gs_tensor **out) {
  *out = gs_tensor_view_of(x, x->ndim, x->shape, x->stride, x->offset);
  return *out ? GS_OK : gs_error_code(GS_ERR_OOM, "out of host memory");
}

/* The leaf a chain of views was taken from, or NULL when x is not a view
 * (of a view ...) of a leaf. */
static const gs_tensor *viewed_leaf(const gs_node *n) {
  while (n && n->is_view) {
    if (n->next_leaf[0]) return n->next_leaf[0];
    n = n->next_fn[0];
  }
  return NULL;
}

gs_status gs_ag_check_inplace(const gs_tensor *x) {
  if (!gs_grad_enabled) return GS_OK;
  if (x->requires_grad && !x->grad_fn)
    return gs_error("a leaf Variable that requires grad is being used in an in-place operation.");
  const gs_tensor *b = x->base;
  if ((b && b->buf == x->buf && b->requires_grad && !b->grad_fn) || viewed_leaf(x->grad_fn))
    return gs_error("a view of a leaf Variable that requires grad is being used in an in-place operation.");
  return GS_OK;
}

/* Whether g can be summed down to `shape` (shape broadcasts to g's):
 * what a node's gradient for an input must satisfy. A tensor whose shape
 * changed after it was used (x.data = ...) sends a gradient of its new
 * shape back into nodes that recorded the old one. */
static bool sums_to(const gs_tensor *g, int ndim, const int64_t *shape) {
  if (g->ndim < ndim) return false;
  for (int k = 0; k < ndim; k++) {
    int64_t gd = g->shape[g->ndim - ndim + k];
    if (shape[k] != gd && shape[k] != 1) return false;
  }
  return true;
}

static gs_status invalid_gradient(const gs_node *n, int i, const gs_tensor *g) {
  char got[160], want[160];
  gs_shape_str(g, got, sizeof got);
  size_t k = (size_t)snprintf(want, sizeof want, "[");
  for (int d = 0; d < n->in_ndim[i] && k < sizeof want; d++)
    k += (size_t)snprintf(want + k, sizeof want - k, "%s%lld", d ? ", " : "", (long long)n->in_shape[i][d]);
  if (k < sizeof want) snprintf(want + k, sizeof want - k, "]");
  return gs_error("Function %s returned an invalid gradient at index %d - got %s but expected shape compatible "
                  "with %s (a tensor's shape changed after it was used, e.g. by x.data = ...)", n->name, i, got, want);
}

gs_status gs_sum_to(const gs_tensor *g, int ndim, const int64_t *shape, gs_tensor **out) {
  if (!sums_to(g, ndim, shape)) {
    char got[160];
    gs_shape_str(g, got, sizeof got);
    return gs_error("autograd: a gradient of shape %s cannot be summed to the %d-dim shape of its input "
                    "(a tensor's shape changed after it was used?)", got, ndim);
  }
  gs_tensor *cur = (gs_tensor *)g;
  gs_tensor_retain(cur);
  /* leading dims that the target does not have */
  while (cur->ndim > ndim) {
    gs_tensor *r;
    gs_status s = gs_reduce(GS_R_SUM, cur, 0, false, &r, NULL);
    gs_tensor_release(cur);
    GS_TRY(s);
    cur = r;
  }
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 1 && cur->shape[d] != 1) {
      gs_tensor *r;
      gs_status s = gs_reduce(GS_R_SUM, cur, d, true, &r, NULL);
      gs_tensor_release(cur);
      GS_TRY(s);
      cur = r;
    }
  }
  *out = cur;
  return GS_OK;
}

/* Adds g into *slot (a fresh or accumulated gradient). */
static gs_status accumulate(gs_tensor **slot, gs_tensor *g) {
  if (!*slot) { gs_tensor_retain(g); *slot = g; return GS_OK; }
  gs_tensor *r;
  GS_TRY(gs_binary(GS_B_ADD, *slot, g, &r));
  gs_tensor_release(*slot);
  *slot = r;
  return GS_OK;
}

/* Into a leaf's .grad: a contiguous tensor of the leaf's dtype and device,
 * updated in place afterwards so references to x.grad see the sum. */
static gs_status accumulate_leaf(gs_tensor *leaf, gs_tensor *g) {
  gs_tensor *c;
  GS_TRY(gs_to(g, gs_tensor_device(leaf), leaf->dtype, &c));
  gs_status s = GS_OK;
  if (!leaf->grad) {
    /* g can become .grad itself when nothing else holds it or its storage
     * (our reference, the caller's, one buffer owner) and it spans that
     * whole storage (not a slice of a larger gradient, which would keep
     * all of it alive); else a copy, since .grad is updated in place */
    bool unshared = g->refcount == 2 && g->buf->refcount == 1 && !g->grad_fn && gs_is_contiguous(g) &&
                    g->offset == 0 && (size_t)gs_numel(g) * gs_dtype_size(g->dtype) == g->buf->nbytes;
    if (c == g && unshared) { leaf->grad = c; c->is_grad = true; return GS_OK; }
    if (c == g) { gs_tensor_release(c); s = gs_clone(g, &c); if (s != GS_OK) return s; }
    else if (!gs_is_contiguous(c)) { gs_tensor *cc; s = gs_clone(c, &cc); gs_tensor_release(c); if (s != GS_OK) return s; c = cc; }
    leaf->grad = c;
    c->is_grad = true;
    return GS_OK;
  }
  gs_hold_begin(); /* .grad is the user's: the sum completes (gs_common.h) */
  s = gs_binary_(GS_B_ADD, leaf->grad, c);
  gs_hold_end();
  gs_tensor_release(c);
  return s;
}

static unsigned epoch;

static gs_status collect(gs_node *n, gs_node ***list, int *count, int *cap) {
  epoch++;
  n->mark = epoch;
  /* iterative DFS: a node's deps counts its parents within the graph */
  gs_node **stack = malloc(sizeof(gs_node *) * 64);
  int top = 0, scap = 64;
  if (!stack) return gs_error_code(GS_ERR_OOM, "out of memory in backward");
  stack[top++] = n;
  n->deps = 0;
  n->acc = NULL;
  (*list)[(*count)++] = n;
  n->refcount++; /* held by the list */
  while (top > 0) {
    gs_node *cur = stack[--top];
    for (int i = 0; i < cur->ninputs; i++) {
      gs_node *m = cur->next_fn[i];
      if (!m) continue;
      if (m->mark != epoch) {
        m->mark = epoch;
        if (*count == *cap) {
          *cap *= 2;
          gs_node **nl = realloc(*list, sizeof(gs_node *) * (size_t)*cap);
          if (!nl) { free(stack); return gs_error_code(GS_ERR_OOM, "out of memory in backward"); }
          *list = nl;
        }
        m->deps = 0;
        m->acc = NULL;
        m->refcount++;
        (*list)[(*count)++] = m;
        if (top == scap) {
          scap *= 2;
          gs_node **ns = realloc(stack, sizeof(gs_node *) * (size_t)scap);
          if (!ns) { free(stack); return gs_error_code(GS_ERR_OOM, "out of memory in backward"); }
          stack = ns;
        }
        stack[top++] = m;
      }
      m->deps++;
    }
  }
  free(stack);
  return GS_OK;
}

/* After its backward a node frees what it saved (retain_graph=False);
 * only a node that needed saved values refuses a second pass. */
static void release_saved(gs_node *n) {
  for (int i = 0; i < GS_AG_MAX_SAVED; i++) {
    if (!n->saved[i]) continue;
    gs_tensor_release(n->saved[i]);
    n->saved[i] = NULL;
    n->released = true;
  }
  if (n->inner) {
    release_saved(n->inner);
    n->released = n->released || n->inner->released;
  }
}

/* Whether a ready node sends its gradient to another device (the backward
 * of a copy between devices). */
static bool moves_device(const gs_node *n) {
  if (!n->acc) return false;
  gs_device here = gs_tensor_device(n->acc);
  for (int i = 0; i < n->ninputs; i++)
    if ((n->next_fn[i] || n->next_leaf[i]) && !gs_device_equal(n->in_device[i], here)) return true;
  return false;
}

gs_status gs_backward(gs_tensor *root, gs_tensor *grad) {
  if (!gs_requires_grad(root))
    return gs_error("element 0 of tensors does not require grad and does not have a grad_fn");
  gs_tensor *g0 = NULL;
  if (grad) {
    if (grad->ndim != root->ndim || memcmp(grad->shape, root->shape, sizeof(int64_t) * (size_t)root->ndim)) {
      char a[128], b[128];
      gs_shape_str(grad, a, sizeof a);
      gs_shape_str(root, b, sizeof b);
      return gs_error("Mismatch in shape: grad_output[0] has a shape of %s and output[0] has a shape of %s.", a, b);
    }
    GS_TRY(gs_to(grad, gs_tensor_device(root), root->dtype, &g0));
  } else {
    if (gs_numel(root) != 1) return gs_error("grad can be implicitly created only for scalar outputs");
    GS_TRY(gs_full(gs_tensor_device(root), root->dtype, root->ndim, root->shape, gs_scalar_i(1), &g0));
  }
  gs_ag_refresh_view(root);
  if (!root->grad_fn) { /* a leaf: its own gradient */
    gs_status s = accumulate_leaf(root, g0);
    gs_tensor_release(g0);
    if (s == GS_OK && root->has_grad_hook && gs_grad_ready_hook) s = gs_grad_ready_hook(root);
    if (gs_backward_end_hook) { gs_status e = gs_backward_end_hook(s == GS_OK); if (s == GS_OK) s = e; }
    return s;
  }
  bool was = gs_grad_enabled;
  gs_grad_enabled = false; /* the backward pass itself is not recorded */
  int count = 0, cap = 64;
  gs_node **list = malloc(sizeof(gs_node *) * (size_t)cap);
  gs_status s = list ? collect(root->grad_fn, &list, &count, &cap) : gs_error_code(GS_ERR_OOM, "out of memory");
  for (int i = 0; i < count && s == GS_OK; i++)
    if (list[i]->released)
      s = gs_error("Trying to backward through the graph a second time (or directly access saved tensors after "
                   "they have already been freed). Saved intermediate values of the graph are freed when you "
                   "call backward().");
  if (s == GS_OK) { root->grad_fn->acc = g0; gs_tensor_retain(g0); }
  /* hooked leaves count the edges into them that this pass will run */
  for (int pass = 0; pass < 2 && s == GS_OK; pass++)
    for (int i = 0; i < count; i++)
      for (int k = 0; k < list[i]->ninputs; k++) {
        gs_tensor *leaf = list[i]->next_leaf[k];
        if (leaf && leaf->has_grad_hook) leaf->grad_pending = pass == 0 ? 0 : leaf->grad_pending + 1;
      }
  /* Kahn: a queue of nodes whose every consumer has run. Devices queue
   * their kernels asynchronously, and this host loop is what feeds them:
   * a node that moves a gradient to another device goes to the front, so
   * that device starts its share of the backward while this one works
   * through its own (DataParallel's replicas), instead of after it. */
  gs_node **queue = malloc(sizeof(gs_node *) * (size_t)(2 * count + 2));
  int qh = count + 1, qt = count + 1;
  if (!queue && s == GS_OK) s = gs_error_code(GS_ERR_OOM, "out of memory");
  if (s == GS_OK) queue[qt++] = root->grad_fn;
  while (s == GS_OK && qh < qt) {
    gs_node *n = queue[qh++];
    s = gs_node_check_saved(n);
    gs_tensor *grads[GS_AG_MAX_IN] = {NULL};
    if (s == GS_OK && n->acc) s = n->backward(n, n->acc, grads);
    /* the incoming gradient is let go before the outgoing ones are used:
     * a view of it (a transpose's backward) then owns its storage alone,
     * and can become a leaf's .grad without a copy */
    gs_tensor_release(n->acc);
    n->acc = NULL;
    for (int i = 0; i < n->ninputs; i++) {
      gs_tensor *gi = grads[i];
      if (s == GS_OK && gi) {
        /* reduce broadcast gradients to the input's shape */
        gs_tensor *r;
        s = sums_to(gi, n->in_ndim[i], n->in_shape[i]) ? gs_sum_to(gi, n->in_ndim[i], n->in_shape[i], &r)
                                                       : invalid_gradient(n, i, gi);
        if (s == GS_OK) { gs_tensor_release(gi); gi = r; grads[i] = r; }
      }
      if (s == GS_OK && gi) {
        if (n->next_fn[i]) s = accumulate(&n->next_fn[i]->acc, gi);
        else if (n->next_leaf[i]) s = accumulate_leaf(n->next_leaf[i], gi);
      }
      gs_tensor *leaf = n->next_leaf[i];
      if (s == GS_OK && leaf && leaf->has_grad_hook && --leaf->grad_pending == 0 && leaf->grad && gs_grad_ready_hook)
        s = gs_grad_ready_hook(leaf);
      if (n->next_fn[i] && --n->next_fn[i]->deps == 0) {
        if (moves_device(n->next_fn[i])) queue[--qh] = n->next_fn[i];
        else queue[qt++] = n->next_fn[i];
      }
      gs_tensor_release(grads[i]);
    }
    release_saved(n);
  }
  for (int i = 0; i < count; i++) {
    gs_tensor_release(list[i]->acc);
    list[i]->acc = NULL;
    gs_grad_fn_release(list[i]);
  }
  free(list);
  free(queue);
  gs_tensor_release(g0);
  if (gs_backward_end_hook) { gs_status e = gs_backward_end_hook(s == GS_OK); if (s == GS_OK) s = e; }
  gs_grad_enabled = was;
  return s;
}
