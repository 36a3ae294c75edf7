/* gs_autograd.h: reverse-mode autograd in the engine. The gs_ag_* ops call
 * the plain engine ops and, when grad mode is on and an input requires
 * grad, record a node holding what the backward formula needs. Nodes
 * never hold their own outputs (only views without grad_fn), so the graph
 * has no reference cycles. */
#ifndef GS_AUTOGRAD_H
#define GS_AUTOGRAD_H

#include "ops/gs_ops.h"

#define GS_AG_MAX_IN 3
#define GS_AG_MAX_SAVED 3

typedef struct gs_node gs_node;
/* grads[i] receives the gradient for input i (NULL when none). */
typedef gs_status (*gs_backward_fn)(gs_node *n, gs_tensor *g, gs_tensor **grads);

struct gs_node {
  int refcount;
  const char *name;                     /* PyTorch's: "AddmmBackward0" */
  gs_backward_fn backward;
  int ninputs;
  gs_node *next_fn[GS_AG_MAX_IN];       /* the input's grad_fn, or */
  gs_tensor *next_leaf[GS_AG_MAX_IN];   /* the input itself when it is a leaf needing grad */
  int in_ndim[GS_AG_MAX_IN];
  int64_t in_shape[GS_AG_MAX_IN][GS_MAX_DIMS];
  gs_dtype in_dtype[GS_AG_MAX_IN];
  gs_device in_device[GS_AG_MAX_IN];
  gs_tensor *saved[GS_AG_MAX_SAVED];
  uint64_t saved_version[GS_AG_MAX_SAVED];
  const char *saved_of[GS_AG_MAX_SAVED]; /* the node that made a saved tensor (NULL: none), for messages */
  bool saved_out[GS_AG_MAX_SAVED];       /* a saved output of this node (else an input) */
  double scalar[2];
  int64_t ints[GS_MAX_DIMS];
  int nints;
  bool released;                        /* saved tensors freed by a backward */
  bool is_view;                         /* the output shares the input's storage */
  unsigned mark;                        /* visit epoch of the current backward */
  /* CopySlices (an in-place op through a view, gs_autograd_inplace.c):
   * the op's own node, run on the region of the base's gradient that the
   * view covers (shape, strides and offset relative to the contiguous
   * base); AsStridedBackward0 uses the region too */
  gs_node *inner;
  int r_ndim;
  int64_t r_shape[GS_MAX_DIMS], r_stride[GS_MAX_DIMS], r_offset;
  /* backward pass bookkeeping */
  gs_tensor *acc;
  int deps;
};

extern bool gs_grad_enabled;

const char *gs_grad_fn_name(const gs_node *n);
void gs_grad_fn_release(gs_node *n);
void gs_node_destroy(gs_node *n); /* only for gs_release_dead */
bool gs_requires_grad(const gs_tensor *t);
/* A view whose base was written in place since its grad_fn was made (its
 * buffer's version moved on) takes its part of the base's grad_fn now
 * (AsStridedBackward0), as PyTorch regenerates a view's grad_fn; nothing
 * for any other tensor. Called where a grad_fn is read: recording a node,
 * backward, x.grad_fn. */
void gs_ag_refresh_view(gs_tensor *x);

/* Hooks the binding sets (NULL: none). gs_grad_ready_hook(leaf) runs for a
 * leaf with has_grad_hook once a backward pass has run every edge into
 * it and it has a .grad (PyTorch's post-accumulate-grad hooks: where
 * DistributedDataParallel starts reducing a bucket); an error from it
 * stops the pass. gs_backward_end_hook(ok) runs at the end of every pass
 * that reached a graph, ok false when the pass failed. */
extern gs_status (*gs_grad_ready_hook)(gs_tensor *leaf);
extern gs_status (*gs_backward_end_hook)(bool ok);

/* root.backward(grad); grad may be NULL for a one-element root. */
gs_status gs_backward(gs_tensor *root, gs_tensor *grad);
/* Refuses in-place writes PyTorch refuses: into a leaf that requires
 * grad, or into a view of one. */
gs_status gs_ag_check_inplace(const gs_tensor *x);
/* PyTorch's error when a tensor n saved for its backward was changed in
 * place since (its buffer's version moved on); GS_OK when none was. */
gs_status gs_node_check_saved(const gs_node *n);
/* x.grad = g (g may be NULL) as PyTorch validates it: same dtype, device
 * and shape, not x itself; and no reference cycle: g has no grad_fn and x
 * is not on g's own .grad chain. */
gs_status gs_ag_set_grad(gs_tensor *x, gs_tensor *g);
/* A tensor sharing x's storage, outside the graph. */
gs_status gs_detach(const gs_tensor *x, gs_tensor **out);

gs_status gs_ag_unary(gs_unary_op op, gs_tensor *x, const double *args, gs_tensor **out);
gs_status gs_ag_binary(gs_binary_op op, gs_tensor *a, gs_tensor *b, gs_tensor **out);
gs_status gs_ag_binary_scalar(gs_binary_op op, gs_tensor *a, gs_scalar s, bool reversed, gs_tensor **out);
gs_status gs_ag_sum(gs_tensor *x, int dim, bool keepdim, gs_tensor **out);
gs_status gs_ag_mean(gs_tensor *x, int dim, bool keepdim, gs_tensor **out);
gs_status gs_ag_prod(gs_tensor *x, int dim, bool keepdim, gs_tensor **out);
gs_status gs_ag_softmax(gs_tensor *x, int dim, bool log, gs_tensor **out);
gs_status gs_ag_matmul(gs_tensor *a, gs_tensor *b, int which, gs_tensor **out); /* 0 matmul 1 mm 2 bmm */
gs_status gs_ag_addmm(gs_tensor *bias, gs_tensor *a, gs_tensor *b, gs_tensor **out);
gs_status gs_ag_to(gs_tensor *x, gs_device dev, gs_dtype dt, gs_tensor **out);
gs_status gs_ag_to_ex(gs_tensor *x, gs_device dev, gs_dtype dt, bool non_blocking, gs_tensor **out);
gs_status gs_ag_clone(gs_tensor *x, gs_tensor **out);
/* x:pin_memory(): a clone in pinned host memory, the source of
 * asynchronous copies to a device; x itself (retained) when it is pinned
 * already; refused for a tensor that is not on the cpu. */
gs_status gs_ag_pin_memory(gs_tensor *x, gs_tensor **out);
gs_status gs_ag_join(gs_tensor **xs, int n, int dim, bool stack, gs_tensor **out);
gs_status gs_ag_var(gs_tensor *x, int dim, bool keepdim, int64_t correction, bool take_sqrt, gs_tensor **out);
gs_status gs_ag_norm(gs_tensor *x, double p, gs_tensor **out);
/* max/min whole (dim < 0) or along dim; indices may be NULL */
gs_status gs_ag_extremum(gs_tensor *x, bool is_max, int dim, bool keepdim, gs_tensor **values, gs_tensor **indices);
/* target: integer class indices as the user gives them, 1-based */
gs_status gs_ag_nll_loss(gs_tensor *logp, gs_tensor *target, gs_tensor **out);

/* convolution (gs_autograd_conv.c): gs_conv recorded as ConvolutionBackward0;
 * b may be NULL */
gs_status gs_ag_conv(gs_tensor *x, gs_tensor *w, gs_tensor *b, const gs_conv_opts *o, gs_tensor **out);

/* ---- numbers that change the op (gs_autograd_scalars.c): the binding
 * passes each number as the user wrote it (integer or float) ---- */
/* a op b with a tensor or a number on each side (at least one tensor) */
gs_status gs_ag_binary_mixed(gs_binary_op op, gs_tensor *a, gs_scalar as, gs_tensor *b, gs_scalar bs, gs_tensor **out);
/* a op alpha * b for add/sub; a or b may be a number (its tensor NULL, the
 * number in as / bs). A float alpha with two integral operands is refused. */
gs_status gs_ag_add_alpha(gs_binary_op op, gs_tensor *a, gs_scalar as, gs_tensor *b, gs_scalar bs, gs_scalar alpha,
                          gs_tensor **out);
/* x op= alpha * y (y NULL: the number ys) */
gs_status gs_ag_add_alpha_(gs_binary_op op, gs_tensor *x, gs_tensor *y, gs_scalar ys, gs_scalar alpha);
/* clamp(x, lo, hi), a bound NULL when not given (one of them must be); a
 * float bound promotes an integer x to float32 */
gs_status gs_ag_clamp(gs_tensor *x, const gs_scalar *lo, const gs_scalar *hi, gs_tensor **out);
gs_status gs_ag_clamp_(gs_tensor *x, const gs_scalar *lo, const gs_scalar *hi);

/* ---- views: the engine's view ops (gs_op_view.c), then a node routing
 * the gradient back to the input (gs_autograd_views.c) ---- */
gs_status gs_ag_view(gs_tensor *x, int ndim, const int64_t *shape, bool reshape, gs_tensor **out);
gs_status gs_ag_flatten(gs_tensor *x, int start, int end, gs_tensor **out);
gs_status gs_ag_unsqueeze(gs_tensor *x, int dim, gs_tensor **out);
gs_status gs_ag_squeeze(gs_tensor *x, int dim, gs_tensor **out);
gs_status gs_ag_t(gs_tensor *x, gs_tensor **out);
gs_status gs_ag_transpose(gs_tensor *x, int d0, int d1, gs_tensor **out);
gs_status gs_ag_permute(gs_tensor *x, int ndims, const int *dims, gs_tensor **out);
gs_status gs_ag_expand(gs_tensor *x, int ndim, const int64_t *shape, gs_tensor **out);
gs_status gs_ag_select(gs_tensor *x, int dim, int64_t index, gs_tensor **out);
gs_status gs_ag_narrow(gs_tensor *x, int dim, int64_t start, int64_t len, gs_tensor **out);
gs_status gs_ag_slice(gs_tensor *x, int dim, int64_t start, int64_t end, int64_t step, gs_tensor **out);

/* x[{...}]: one entry per leading dim of x, each an element position
 * (0-based as gsL_pos0 gives it; dropping the dim) or a range {a, b, step}
 * as the user wrote it (1-based, inclusive; nvals of the three given),
 * kept as a dim. The binding reads every entry before this runs (reading
 * may run metamethods that change x); ranges are resolved here against x
 * as it is (gs_index_range). Applied in order; messages name the dims of x
 * as the user counts them. n > x->ndim is refused before any entry is
 * read. */
typedef struct { bool range; int nvals; int64_t pos, a, b, step; } gs_index_entry;
gs_status gs_ag_index(gs_tensor *x, int n, const gs_index_entry *e, gs_tensor **out);

/* x.index_select(dim, idx) (idx 0-based); refused while x requires grad */
gs_status gs_ag_index_select(gs_tensor *x, int dim, const gs_tensor *idx, gs_tensor **out);

/* ---- in-place ops on tensors the user holds (gs_autograd_inplace.c):
 * the guard (gs_ag_check_inplace), then the engine's in-place op; when x,
 * the tensor it is a view of, or an operand requires grad, the op is
 * recorded as PyTorch does: x's grad_fn becomes the op's node (its input
 * x's old grad_fn), and a write into a view of a base gives the base a
 * CopySlices node. The buffer's version counter moves on, so a node that
 * saved x before refuses its backward. ---- */
gs_status gs_ag_unary_(gs_unary_op op, gs_tensor *x, const double *args);
gs_status gs_ag_binary_(gs_binary_op op, gs_tensor *a, const gs_tensor *b);
gs_status gs_ag_binary_scalar_(gs_binary_op op, gs_tensor *a, gs_scalar s);
gs_status gs_ag_fill_(gs_tensor *x, gs_scalar v);
gs_status gs_ag_fill_tensor_(gs_tensor *x, const gs_tensor *v);
gs_status gs_ag_copy_(gs_tensor *dst, const gs_tensor *src);
gs_status gs_ag_uniform_(gs_tensor *x, double lo, double hi);
gs_status gs_ag_normal_(gs_tensor *x, double mean, double std);

/* ---- a leaf's autograd flags ---- */
/* x.requires_grad = on: only floating leaves may turn it on, and only
 * leaves may change it. */
gs_status gs_ag_set_requires_grad(gs_tensor *x, bool on);
/* x:detach_(): x leaves the graph in place. */
gs_status gs_ag_detach_(gs_tensor *x);
/* x:register_post_accumulate_grad_hook: on only for a leaf that requires
 * grad; off when its last hook is removed. */
gs_status gs_ag_set_grad_hook(gs_tensor *x, bool on);
/* x.data = y: x takes y's storage, dtype and geometry (a tensor that
 * requires grad only a floating one). */
gs_status gs_ag_set_data(gs_tensor *x, const gs_tensor *y);
/* nn.Parameter(x): a floating leaf, marked as a parameter. */
gs_status gs_ag_make_parameter(gs_tensor *x, bool requires_grad);

/* Reduces g (broadcast shape) to shape by summing broadcast dims. */
gs_status gs_sum_to(const gs_tensor *g, int ndim, const int64_t *shape, gs_tensor **out);

/* Internal to the autograd files (gs_autograd_inplace.c): the backward of
 * a view regenerated after an in-place write (zeros of the base's shape,
 * g in the view's region), and recording that region in a node. */
gs_status gs_bw_as_strided(gs_node *n, gs_tensor *g, gs_tensor **gr);
void gs_ag_set_region(gs_node *n, const gs_tensor *x, const gs_tensor *base);

/* Internal to the autograd files: a new node with inputs recorded. */
gs_node *gs_node_new(const char *name, gs_backward_fn fn, int ninputs, gs_tensor *const *inputs);
gs_status gs_node_save(gs_node *n, int slot, const gs_tensor *t);
void gs_node_attach(gs_node *n, gs_tensor *out);
/* Recording a node, the one helper every gs_ag_* op uses. gs_ag_wants:
 * whether grad mode is on and one of xs[0..n) (NULL: an absent optional
 * input) requires grad. gs_ag_attach: attaches n to out when s is GS_OK,
 * else frees n and returns s (GS_ERR_OOM for a NULL n, whose allocation
 * failed); the caller keeps out either way. gs_ag_record: the same, and
 * when recording failed the op fails as a whole: *out is released and set
 * to NULL. */
bool gs_ag_wants(gs_tensor *const *xs, int n);
gs_status gs_ag_attach(gs_node *n, gs_tensor *out, gs_status s);
gs_status gs_ag_record(gs_node *n, gs_tensor **out, gs_status s);

#endif
