/* gs_op_view.c: operations that return views sharing the input's buffer. */
#include <stdio.h>
#include <string.h>
#include "ops/gs_ops.h"

static gs_status make_view(const gs_tensor *x, int ndim, const int64_t *shape, const int64_t *stride,
                           int64_t offset, gs_tensor **out) {
  *out = gs_tensor_view_of(x, ndim, shape, stride, offset);
  return *out ? GS_OK : gs_error_code(GS_ERR_OOM, "out of host memory");
}

/* Replaces one -1 in shape by what the element count implies. */
static gs_status infer_shape(const gs_tensor *x, int ndim, const int64_t *in, int64_t *shape) {
  int64_t numel = gs_numel(x), known = 1;
  int infer = -1;
  for (int i = 0; i < ndim; i++) {
    shape[i] = in[i];
    if (in[i] == -1) {
      if (infer >= 0) return gs_error("only one dimension can be inferred (given as -1)");
      infer = i;
    } else if (in[i] < 0) {
      return gs_error("invalid shape dimension %lld: sizes must be >= 0 (or -1 to infer one)", (long long)in[i]);
    }
  }
  if (infer >= 0) shape[infer] = 1;
  GS_TRY(gs_check_shape(ndim, shape, &known)); /* known: product without the -1 */
  bool ok = infer >= 0 ? known != 0 && numel % known == 0 : known == numel;
  if (infer >= 0 && ok) shape[infer] = numel / known;
  if (!ok) {
    char buf[256];
    size_t k = (size_t)snprintf(buf, sizeof buf, "[");
    for (int i = 0; i < ndim && k < sizeof buf; i++)
      k += (size_t)snprintf(buf + k, sizeof buf - k, i ? ", %lld" : "%lld", (long long)in[i]);
    return gs_error("shape '%s]' is invalid for input of size %lld", buf, (long long)numel);
  }
  return GS_OK;
}

/* The strides that let `shape` view x's memory without a copy, if any
 * (groups of input dims that are contiguous with each other can be split
 * or merged freely). Returns false when a copy is needed. */
static bool view_strides(const gs_tensor *x, int ndim, const int64_t *shape, int64_t *stride) {
  if (gs_numel(x) == 0 || x->ndim == 0) { gs_contiguous_strides(ndim, shape, stride); return true; }
  int v = ndim - 1;
  int64_t base = x->stride[x->ndim - 1], have = 1, built = 1;
  for (int i = x->ndim - 1; i >= 0; i--) {
    have *= x->shape[i];
    bool chunk_ends = i == 0 || (x->shape[i - 1] != 1 && x->stride[i - 1] != have * base);
    if (!chunk_ends) continue;
    /* hand the chunk's elements to view dims, innermost first */
    while (v >= 0 && (built < have || shape[v] == 1)) {
      stride[v] = built * base;
      built *= shape[v];
      v--;
    }
    if (built != have) return false;
    if (i > 0) { base = x->stride[i - 1]; have = 1; built = 1; }
  }
  return v == -1;
}

gs_status gs_view(const gs_tensor *x, int ndim, const int64_t *in, gs_tensor **out) {
  int64_t shape[GS_MAX_DIMS], stride[GS_MAX_DIMS];
  GS_TRY(gs_check_ndim(ndim));
  GS_TRY(infer_shape(x, ndim, in, shape));
  if (!view_strides(x, ndim, shape, stride))
    return gs_error("view size is not compatible with input tensor's size and stride (at least one dimension "
                    "spans across two contiguous subspaces). Use :reshape(...) instead.");
  return make_view(x, ndim, shape, stride, x->offset, out);
}

gs_status gs_reshape(const gs_tensor *x, int ndim, const int64_t *in, gs_tensor **out) {
  int64_t shape[GS_MAX_DIMS], stride[GS_MAX_DIMS];
  GS_TRY(gs_check_ndim(ndim));
  GS_TRY(infer_shape(x, ndim, in, shape));
  if (view_strides(x, ndim, shape, stride)) return make_view(x, ndim, shape, stride, x->offset, out);
  gs_tensor *c;
  GS_TRY(gs_clone(x, &c));
  gs_status s = gs_view(c, ndim, shape, out);
  gs_tensor_release(c);
  return s;
}

gs_status gs_transpose(const gs_tensor *x, int d0, int d1, gs_tensor **out) {
  int64_t shape[GS_MAX_DIMS], stride[GS_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  memcpy(stride, x->stride, sizeof stride);
  if (x->ndim > 0) {
    int64_t t = shape[d0]; shape[d0] = shape[d1]; shape[d1] = t;
    t = stride[d0]; stride[d0] = stride[d1]; stride[d1] = t;
  }
  return make_view(x, x->ndim, shape, stride, x->offset, out);
}

gs_status gs_t(const gs_tensor *x, gs_tensor **out) {
  if (x->ndim > 2) return gs_error("t() expects a tensor with <= 2 dimensions, but self is %dD", x->ndim);
  return gs_transpose(x, 0, x->ndim > 1 ? 1 : 0, out);
}

gs_status gs_permute(const gs_tensor *x, int ndims, const int *dims, gs_tensor **out) {
  if (ndims != x->ndim)
    return gs_error("permute: number of dimensions in the tensor input does not match the length of the desired "
                    "ordering of dimensions i.e. input.dim() = %d is not equal to len(dims) = %d", x->ndim, ndims);
  int64_t shape[GS_MAX_DIMS], stride[GS_MAX_DIMS];
  bool seen[GS_MAX_DIMS] = {false};
  for (int i = 0; i < x->ndim; i++) {
    if (dims[i] < 0 || dims[i] >= x->ndim) return gs_error("permute: dimension %d out of range", dims[i] + 1);
    if (seen[dims[i]]) return gs_error("permute: dimension %d repeats: each dimension must appear once", dims[i] + 1);
    seen[dims[i]] = true;
    shape[i] = x->shape[dims[i]];
    stride[i] = x->stride[dims[i]];
  }
  return make_view(x, x->ndim, shape, stride, x->offset, out);
}

/* How the user wrote a position that reached the engine 0-based. */
static long long user_pos(int64_t i) { return i == GS_INDEX_ZERO ? 0 : i >= 0 ? (long long)i + 1 : (long long)i; }

gs_status gs_narrow(const gs_tensor *x, int dim, int64_t start, int64_t len, gs_tensor **out) {
  if (x->ndim == 0) return gs_error("narrow() cannot be applied to a 0-dim tensor.");
  int64_t size = x->shape[dim], at = start < 0 && start >= -size ? start + size : start;
  if (at < 0 || len < 0 || at > size || len > size - at)
    return gs_error("narrow: start %lld and length %lld are out of range for dimension %d of size %lld "
                    "(start must be >= 1, or -%lld to -1 from the end, and start + length - 1 <= %lld)",
                    user_pos(start), (long long)len, dim + 1, (long long)size, (long long)size, (long long)size);
  int64_t shape[GS_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  shape[dim] = len;
  return make_view(x, x->ndim, shape, x->stride, x->offset + at * x->stride[dim], out);
}

/* Python's slice rule on a 0-based [start, end) with step > 0: the bounds
 * clamp into [0, size] (callers have already counted negatives from the
 * end), so any int64 bounds and step are safe: no arithmetic below can
 * overflow, and the length is ceil((end - start) / step) computed as
 * (end - start - 1) / step + 1. */
gs_status gs_slice(const gs_tensor *x, int dim, int64_t start, int64_t end, int64_t step, gs_tensor **out) {
  if (step <= 0) return gs_error("slice step must be positive, got %lld", (long long)step);
  int64_t size = x->shape[dim];
  start = start < 0 ? 0 : start > size ? size : start;
  end = end < start ? start : end > size ? size : end;
  int64_t len = end > start ? (end - start - 1) / step + 1 : 0;
  int64_t shape[GS_MAX_DIMS], stride[GS_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  memcpy(stride, x->stride, sizeof stride);
  shape[dim] = len;
  /* a stride * step past int64 only happens for a huge step, which leaves
   * at most one element: its stride then does not matter */
  if (__builtin_mul_overflow(x->stride[dim], step, &stride[dim])) {
    if (len > 1) return gs_error("slice: step %lld is too large for this tensor's layout", (long long)step);
    stride[dim] = x->stride[dim];
  }
  return make_view(x, x->ndim, shape, stride, x->offset + (len ? start : 0) * x->stride[dim], out);
}

gs_status gs_check_index(int64_t index, int64_t size, int shown_dim) {
  /* x[0]: a Python habit, said plainly */
  if (index == GS_INDEX_ZERO && size > 0)
    return gs_error("index 0 is out of range for dimension %d of size %lld: positions are 1-based in gshell, "
                    "the first is 1 (expected 1 to %lld, or -%lld to -1)",
                    shown_dim + 1, (long long)size, (long long)size, (long long)size);
  if (index < -size || index >= size)
    return gs_error("index %lld is out of range for dimension %d of size %lld (expected 1 to %lld, or -%lld to -1)",
                    user_pos(index), shown_dim + 1, (long long)size, (long long)size, (long long)size);
  return GS_OK;
}

gs_status gs_select(const gs_tensor *x, int dim, int64_t index, gs_tensor **out) {
  if (x->ndim == 0)
    return gs_error("select() cannot be applied to a 0-dim tensor: it has no dimension to index (item() reads its value)");
  int64_t size = x->shape[dim];
  GS_TRY(gs_check_index(index, size, dim));
  if (index < 0) index += size;
  int64_t shape[GS_MAX_DIMS], stride[GS_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < x->ndim; i++)
    if (i != dim) { shape[n] = x->shape[i]; stride[n] = x->stride[i]; n++; }
  return make_view(x, n, shape, stride, x->offset + index * x->stride[dim], out);
}

gs_status gs_unsqueeze(const gs_tensor *x, int dim, gs_tensor **out) {
  GS_TRY(gs_check_ndim(x->ndim + 1));
  int64_t shape[GS_MAX_DIMS], stride[GS_MAX_DIMS];
  int n = 0;
  for (int i = 0; i <= x->ndim; i++) {
    if (i == dim) {
      shape[n] = 1;
      stride[n] = i < x->ndim ? x->shape[i] * x->stride[i] : 1;
      n++;
    }
    if (i < x->ndim) { shape[n] = x->shape[i]; stride[n] = x->stride[i]; n++; }
  }
  return make_view(x, n, shape, stride, x->offset, out);
}

gs_status gs_squeeze(const gs_tensor *x, int dim, gs_tensor **out) {
  int64_t shape[GS_MAX_DIMS], stride[GS_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < x->ndim; i++) {
    bool drop = x->shape[i] == 1 && (dim < 0 || dim == i);
    if (!drop) { shape[n] = x->shape[i]; stride[n] = x->stride[i]; n++; }
  }
  return make_view(x, n, shape, stride, x->offset, out);
}

gs_status gs_expand_to(const gs_tensor *x, int ndim, const int64_t *in, gs_tensor **out) {
  int64_t shape[GS_MAX_DIMS];
  if (ndim < x->ndim)
    return gs_error("expand: the number of sizes provided (%d) must be greater or equal to the number of "
                    "dimensions in the tensor (%d)", ndim, x->ndim);
  GS_TRY(gs_check_ndim(ndim));
  for (int i = 0; i < ndim; i++) {
    int j = x->ndim - ndim + i;
    if (in[i] == -1) {
      if (j < 0) return gs_error("expand: -1 is not allowed in a leading, non-existing dimension %d", i + 1);
      shape[i] = x->shape[j];
    } else if (in[i] < 0) {
      return gs_error("expand: invalid size %lld (sizes must be >= 0, or -1 to keep one)", (long long)in[i]);
    } else {
      shape[i] = in[i];
    }
  }
  GS_TRY(gs_check_shape(ndim, shape, NULL));
  gs_tensor *e;
  GS_TRY(gs_expand(x, ndim, shape, &e));
  /* a view is always a new header, even when nothing expands */
  gs_status s = make_view(x, ndim, e->shape, e->stride, e->offset, out);
  gs_tensor_release(e);
  return s;
}

gs_status gs_flatten(const gs_tensor *x, int start, int end, gs_tensor **out) {
  if (x->ndim == 0) { int64_t one = 1; return gs_reshape(x, 1, &one, out); }
  if (start > end) return gs_error("flatten() has invalid args: start_dim cannot come after end_dim");
  int64_t shape[GS_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (i <= start || i > end) shape[n++] = x->shape[i];
    else shape[n - 1] *= x->shape[i];
  }
  return gs_reshape(x, n, shape, out);
}
