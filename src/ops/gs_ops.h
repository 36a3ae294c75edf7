/* gs_ops.h: the engine's operations. Each validates its input, decides the
 * output's dtype (PyTorch's promotion) and shape (broadcasting), allocates
 * it, and dispatches to the backend of the device the tensors live on.
 * Dims here are 0-based and already normalised by the caller unless a
 * function says it accepts negatives. New tensors come back with one
 * reference owned by the caller. On error nothing the caller owns has
 * changed. */
#ifndef GS_OPS_H
#define GS_OPS_H

#include "core/gs_backend.h"
#include "core/gs_op_names.h"

/* ---- validation helpers shared by the op files ---- */
gs_status gs_check_same_device(const gs_tensor *a, const gs_tensor *b);
gs_status gs_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out);
/* True when writing w element by element could change what r still has to
 * read: the same storage, overlapping, and not the very same view. In-place
 * ops then read a copy of r first (PyTorch refuses these; gshell computes
 * them as if r had been read before any write). */
bool gs_partial_overlap(const gs_tensor *w, const gs_tensor *r);
/* Refuses a write into x when several of its elements share one memory
 * location (an expanded view: stride 0 along a dim of size > 1), as
 * PyTorch does; every in-place write calls it. */
gs_status gs_check_writable(const gs_tensor *x);
/* A view of x expanded to shape (stride 0 on broadcast dims). */
gs_status gs_expand(const gs_tensor *x, int ndim, const int64_t *shape, gs_tensor **out);
/* x converted to dtype dt (contiguous); retains and returns x if it already is. */
gs_status gs_cast(const gs_tensor *x, gs_dtype dt, gs_tensor **out);
/* Error for a backend that lacks an op: names the op and the device. */
gs_status gs_no_kernel(const char *op, const gs_tensor *t);
/* be = the backend of t, or return gs_no_kernel when it lacks `slot`. */
#define GS_DISPATCH(be, t, slot, opname)                                    \
  do {                                                                      \
    (be) = gs_device_backend(gs_tensor_device(t));                          \
    if (!(be) || !(be)->slot) return gs_no_kernel((opname), (t));           \
  } while (0)
/* An op's name (messages, placement log, Lua method): "neg", "add", "sum". */
const char *gs_dtype_torch_name(gs_dtype t); /* "Float", "Long": PyTorch's messages */
void gs_shape_str(const gs_tensor *t, char *buf, size_t len); /* "[2, 3]" */
void gs_shape_str_n(int n, const int64_t *shape, char *buf, size_t len); /* the same for a bare shape */
/* One line per op when torch.set_log_device_placement(true). */
extern bool gs_log_placement;
void gs_log_op(const char *op, const gs_tensor *t);

/* ---- type promotion ---- */
gs_dtype gs_result_type2(const gs_tensor *a, const gs_tensor *b);
gs_dtype gs_result_type_scalar(const gs_tensor *a, gs_scalar s);

/* ---- copies, conversion, movement ---- */
gs_status gs_copy_(gs_tensor *dst, const gs_tensor *src); /* broadcasting, any devices/dtypes */
/* non_blocking: a copy from pinned host memory to a device may return
 * before it ran (PyTorch's non_blocking = True) */
gs_status gs_copy_ex(gs_tensor *dst, const gs_tensor *src, bool non_blocking);
gs_status gs_contiguous(const gs_tensor *x, gs_tensor **out);  /* retains x if already */
gs_status gs_clone(const gs_tensor *x, gs_tensor **out);
/* x on dev with dtype dt; retains and returns x itself when nothing changes. */
gs_status gs_to(const gs_tensor *x, gs_device dev, gs_dtype dt, gs_tensor **out);
gs_status gs_to_ex(const gs_tensor *x, gs_device dev, gs_dtype dt, bool non_blocking, gs_tensor **out);

typedef struct { uint64_t count, bytes; } gs_transfer_count;
typedef struct { gs_transfer_count h2d, d2h, d2d; } gs_transfer_stats;
extern gs_transfer_stats gs_transfers;

/* ---- views (share storage) ---- */
/* Lua counts positions from 1, so its 0 names no element and has no 0-based
 * equivalent: bindings pass it as GS_INDEX_ZERO, which every bounds check
 * rejects and reports as the 0 the user wrote. INT64_MAX, because no other
 * Lua integer maps to it (math.maxinteger becomes INT64_MAX - 1, and
 * math.mininteger stays itself, so both are reported exactly). */
#define GS_INDEX_ZERO INT64_MAX
gs_status gs_view(const gs_tensor *x, int ndim, const int64_t *shape, gs_tensor **out); /* one -1 allowed */
gs_status gs_reshape(const gs_tensor *x, int ndim, const int64_t *shape, gs_tensor **out);
gs_status gs_transpose(const gs_tensor *x, int d0, int d1, gs_tensor **out);
gs_status gs_t(const gs_tensor *x, gs_tensor **out); /* x must have <= 2 dims */
gs_status gs_permute(const gs_tensor *x, int ndims, const int *dims, gs_tensor **out); /* ndims must be x's */
gs_status gs_narrow(const gs_tensor *x, int dim, int64_t start, int64_t len, gs_tensor **out); /* negative start ok */
gs_status gs_select(const gs_tensor *x, int dim, int64_t index, gs_tensor **out); /* index 0-based, negatives ok */
/* The one bounds check for an element position (0-based, negatives from the
 * end) along a dim of `size`; the message names dim shown_dim (0-based). */
gs_status gs_check_index(int64_t index, int64_t size, int shown_dim);
/* gs_op_index.c: the user's integers for x[{..., {a, b, step}, ...}] and
 * chunk/split, checked against the tensor as it is, in arithmetic that
 * cannot overflow for any int64. A range entry (1-based, inclusive, nvals
 * of a, b, step given; negatives from the end) as a 0-based [start, end)
 * with its step, for dim shown_dim of the given size: */
gs_status gs_index_range(int nvals, int64_t a, int64_t b, int64_t step, int shown_dim, int64_t size,
                         int64_t *start, int64_t *end, int64_t *step_out);
/* chunk(chunks) / split(split_size) along 0-based dim: pieces of *piece
 * elements (the last may be shorter), *count of them */
gs_status gs_chunk_plan(const gs_tensor *x, int dim, int64_t chunks, int64_t *piece, int64_t *count);
gs_status gs_split_plan(const gs_tensor *x, int dim, int64_t split_size, int64_t *piece, int64_t *count);
/* split(sizes): n non-negative lengths summing to the dim's size */
gs_status gs_split_sizes_check(const gs_tensor *x, int dim, int64_t n, const int64_t *lens);
/* #x: the size of x's first dim (a 0-d tensor has none) */
gs_status gs_len(const gs_tensor *x, int64_t *out);
gs_status gs_unsqueeze(const gs_tensor *x, int dim, gs_tensor **out);              /* dim in [0, ndim] */
gs_status gs_squeeze(const gs_tensor *x, int dim, gs_tensor **out);                /* dim < 0: all size-1 dims */
gs_status gs_expand_to(const gs_tensor *x, int ndim, const int64_t *shape, gs_tensor **out); /* -1 keeps */
gs_status gs_flatten(const gs_tensor *x, int start, int end, gs_tensor **out);
gs_status gs_slice(const gs_tensor *x, int dim, int64_t start, int64_t end, int64_t step, gs_tensor **out);

/* ---- joining ---- */
gs_status gs_cat(gs_tensor **xs, int n, int dim, gs_tensor **out);
gs_status gs_stack(gs_tensor **xs, int n, int dim, gs_tensor **out);

/* ---- factories ---- */
/* A value that full/fill_ may store in dt: PyTorch refuses one the dtype
 * cannot hold ("value cannot be converted to type int8 without overflow")
 * where a C cast would wrap it (300 into int8 is 44). Floats: a finite
 * value beyond the largest finite one; inf and nan fit every float type.
 * Arithmetic with a scalar still wraps, as in PyTorch. */
gs_status gs_scalar_fits(gs_dtype dt, gs_scalar v);
gs_status gs_full(gs_device dev, gs_dtype dt, int ndim, const int64_t *shape, gs_scalar v, gs_tensor **out);
gs_status gs_arange(gs_device dev, gs_dtype dt, double start, double end, double step, gs_tensor **out);
/* arange of integers as the user gave them: exact in int64 beyond 2^53 */
gs_status gs_arange_int(gs_device dev, gs_dtype dt, int64_t start, int64_t end, int64_t step, gs_tensor **out);
gs_status gs_linspace(gs_device dev, gs_dtype dt, double start, double end, int64_t n, gs_tensor **out);
gs_status gs_eye(gs_device dev, gs_dtype dt, int64_t n, int64_t m, gs_tensor **out);
gs_status gs_fill_(gs_tensor *x, gs_scalar v);
gs_status gs_fill_tensor_(gs_tensor *x, const gs_tensor *v); /* v must be 0-d */

/* ---- random (Philox, one stream shared by all devices) ---- */
void gs_manual_seed(uint64_t seed);
uint64_t gs_initial_seed(void);
gs_status gs_uniform_(gs_tensor *x, double lo, double hi);
gs_status gs_normal_(gs_tensor *x, double mean, double std);
/* torch.rand / torch.randn: a new tensor of a floating dtype drawn from
 * U[0, 1) or N(0, 1) */
gs_status gs_rand(gs_device dev, gs_dtype dt, int ndim, const int64_t *shape, bool normal, gs_tensor **out);
gs_status gs_randint_(gs_tensor *x, int64_t lo, int64_t hi);
/* torch.randint: a new tensor of integers drawn from [lo, hi) */
gs_status gs_randint(gs_device dev, gs_dtype dt, int ndim, const int64_t *shape, int64_t lo, int64_t hi,
                     gs_tensor **out);
/* first .. first+n-1 in random order, built on dev in dtype dt (every
 * value must be exact in dt) */
gs_status gs_randperm(gs_device dev, gs_dtype dt, int64_t n, int64_t first, gs_tensor **out);

/* ---- elementwise ---- */
gs_status gs_unary(gs_unary_op op, const gs_tensor *x, const double *args, gs_tensor **out);
gs_status gs_unary_(gs_unary_op op, gs_tensor *x, const double *args);
gs_status gs_binary(gs_binary_op op, const gs_tensor *a, const gs_tensor *b, gs_tensor **out);
/* s op a when reversed, a op s otherwise; s is a Lua number ("wrapped"). */
gs_status gs_binary_scalar(gs_binary_op op, const gs_tensor *a, gs_scalar s, bool reversed, gs_tensor **out);
gs_status gs_binary_(gs_binary_op op, gs_tensor *a, const gs_tensor *b);
gs_status gs_binary_scalar_(gs_binary_op op, gs_tensor *a, gs_scalar s);

/* ---- reductions ---- */
/* dim < 0: whole tensor. values/indices may be NULL when not wanted. */
gs_status gs_reduce(gs_reduce_op op, const gs_tensor *x, int dim, bool keepdim, gs_tensor **values, gs_tensor **indices);
gs_status gs_mean(const gs_tensor *x, int dim, bool keepdim, gs_tensor **out);
gs_status gs_var(const gs_tensor *x, int dim, bool keepdim, int64_t correction, bool take_sqrt, gs_tensor **out);
gs_status gs_norm(const gs_tensor *x, double p, gs_tensor **out);
gs_status gs_all_any(const gs_tensor *x, bool any, gs_tensor **out);
gs_status gs_softmax(const gs_tensor *x, int dim, bool log, gs_tensor **out);
gs_status gs_equal(const gs_tensor *a, const gs_tensor *b, bool *out);
gs_status gs_allclose(const gs_tensor *a, const gs_tensor *b, double rtol, double atol, bool *out);

/* ---- linear algebra ---- */
gs_status gs_mm(const gs_tensor *a, const gs_tensor *b, gs_tensor **out);
gs_status gs_bmm(const gs_tensor *a, const gs_tensor *b, gs_tensor **out);
gs_status gs_matmul(const gs_tensor *a, const gs_tensor *b, gs_tensor **out);

/* ---- indexing ---- */
gs_status gs_index_select(const gs_tensor *x, int dim, const gs_tensor *idx, gs_tensor **out);
/* index_select's backward (gs_op_index_add.c): zeros of shape [ndim] with
 * src's slices added at idx (int64 1-d, 0-based, already checked) along dim */
gs_status gs_index_add(const gs_tensor *src, int dim, const gs_tensor *idx, int ndim, const int64_t *shape,
                       gs_tensor **out);

/* ---- host access (for item, tolist, printing): contiguous copy on the
 * CPU (x itself, retained, when it already is one). ---- */
gs_status gs_to_host_contiguous(const gs_tensor *x, gs_tensor **out);
/* x:item(): the one element of x as a number of x's kind (bool, float or
 * integer); refuses any other element count. */
gs_status gs_item(const gs_tensor *x, gs_scalar *out);

/* ---- convolution (gs_op_conv.c) ---- */
typedef enum { GS_CONV_PAD_EXPLICIT, GS_CONV_PAD_SAME, GS_CONV_PAD_VALID } gs_conv_pad_mode;
/* nd = 1 (conv1d: x [N, C, L] or [C, L], w [Cout, C/groups, k]) or 2
 * (conv2d: x [N, C, H, W] or [C, H, W], w [Cout, C/groups, kh, kw]); the
 * per-dim options are read for nd dims, (h, w) order. */
typedef struct {
  int nd;
  int64_t stride[2], padding[2], dilation[2], groups;
  gs_conv_pad_mode pad_mode; /* padding[] is read only when EXPLICIT */
} gs_conv_opts;
/* y = conv(x, w) + b (b may be NULL), float32/float64, PyTorch's checks
 * and messages */
gs_status gs_conv(const gs_tensor *x, const gs_tensor *w, const gs_tensor *b, const gs_conv_opts *o, gs_tensor **out);
/* The gradients of gs_conv for gy (the output's shape): each of gx, gw, gb
 * NULL when not wanted; gb is [Cout]. */
gs_status gs_conv_backward(const gs_tensor *x, const gs_tensor *w, const gs_tensor *gy, const gs_conv_opts *o,
                           gs_tensor **gx, gs_tensor **gw, gs_tensor **gb);
/* The most bytes of columns one chunk of the batch may take (4 MiB; 16
 * times that on a device whose memory is not the host's, a GPU; at least
 * one sample is taken, whatever its size); a
 * non-zero cap replaces it. Returns the cap before the call. */
size_t gs_conv_col_cap(size_t cap);
/* The Winograd F(2x2, 3x3) fast path for 3x3 stride-1 float32 convs on
 * backends with the conv3x3_wino slots (branch wino): mode 0 off (always
 * im2col), 1 auto (where measured faster; the default), 2 wherever the
 * geometry allows (specs); a negative mode only reads. Returns the mode
 * before the call; *calls (may be NULL) gets how many passes (forward,
 * input gradient, weight gradient each count one) took the path so far. */
int gs_conv_winograd(int mode, int64_t *calls);

#endif
