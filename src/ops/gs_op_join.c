/* gs_op_join.c: cat, stack and index_select. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/gs_ops.h"

gs_status gs_cat(gs_tensor **xs, int n, int dim, gs_tensor **out) {
  if (n == 0) return gs_error("torch.cat(): expected a non-empty list of tensors");
  /* 1-d empty tensors are skipped, as PyTorch does for legacy reasons */
  const gs_tensor *ref = NULL;
  gs_dtype dt = xs[0]->dtype;
  for (int i = 0; i < n; i++) {
    if (i > 0) { GS_TRY(gs_check_same_device(xs[0], xs[i])); dt = gs_promote(dt, xs[i]->dtype); }
    if (!(xs[i]->ndim == 1 && xs[i]->shape[0] == 0) && !ref) ref = xs[i];
  }
  if (!ref) ref = xs[0];
  if (ref->ndim == 0) return gs_error("zero-dimensional tensor (at position 1) cannot be concatenated");
  if (dim < -ref->ndim || dim >= ref->ndim)
    return gs_error("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -ref->ndim,
                    ref->ndim, dim >= 0 ? dim + 1 : dim);
  if (dim < 0) dim += ref->ndim;
  int64_t shape[GS_MAX_DIMS];
  memcpy(shape, ref->shape, sizeof shape);
  shape[dim] = 0;
  for (int i = 0; i < n; i++) {
    const gs_tensor *x = xs[i];
    if (x->ndim == 1 && x->shape[0] == 0) continue;
    if (x->ndim != ref->ndim)
      return gs_error("Tensors must have same number of dimensions: got %d and %d", ref->ndim, x->ndim);
    for (int d = 0; d < x->ndim; d++)
      if (d != dim && x->shape[d] != ref->shape[d])
        return gs_error("Sizes of tensors must match except in dimension %d. Expected size %lld but got size "
                        "%lld for tensor number %d in the list.", dim + 1, (long long)ref->shape[d],
                        (long long)x->shape[d], i + 1);
    shape[dim] += x->shape[dim];
  }
  gs_tensor *r;
  GS_TRY(gs_tensor_empty(gs_tensor_device(xs[0]), dt, ref->ndim, shape, &r));
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    const gs_tensor *x = xs[i];
    if (x->ndim == 1 && x->shape[0] == 0) continue;
    gs_tensor *part;
    gs_status s = gs_narrow(r, dim, at, x->shape[dim], &part);
    if (s == GS_OK) { s = gs_copy_(part, x); gs_tensor_release(part); }
    if (s != GS_OK) { gs_tensor_release(r); return s; }
    at += x->shape[dim];
  }
  *out = r;
  return GS_OK;
}

gs_status gs_stack(gs_tensor **xs, int n, int dim, gs_tensor **out) {
  if (n == 0) return gs_error("stack expects a non-empty list of tensors");
  for (int i = 1; i < n; i++) {
    if (xs[i]->ndim != xs[0]->ndim || memcmp(xs[i]->shape, xs[0]->shape, sizeof(int64_t) * (size_t)xs[0]->ndim)) {
      char a[128], b[128];
      gs_shape_str(xs[0], a, sizeof a);
      gs_shape_str(xs[i], b, sizeof b);
      return gs_error("stack expects each tensor to be equal size, but got %s at entry 1 and %s at entry %d", a, b, i + 1);
    }
  }
  int nd = xs[0]->ndim + 1;
  if (dim < -nd || dim >= nd)
    return gs_error("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -nd, nd, dim >= 0 ? dim + 1 : dim);
  if (dim < 0) dim += nd;
  gs_tensor **vs = malloc(sizeof *vs * (size_t)n);
  if (!vs) return gs_error_code(GS_ERR_OOM, "stack: out of host memory for %d tensors", n);
  int made = 0;
  gs_status s = GS_OK;
  for (; made < n && s == GS_OK; made++) s = gs_unsqueeze(xs[made], dim, &vs[made]);
  if (s != GS_OK) made--;
  if (s == GS_OK) s = gs_cat(vs, n, dim, out);
  for (int i = 0; i < made; i++) gs_tensor_release(vs[i]);
  free(vs);
  return s;
}

gs_status gs_index_select(const gs_tensor *x, int dim, const gs_tensor *idx, gs_tensor **out) {
  GS_TRY(gs_check_same_device(x, idx));
  if (idx->dtype != GS_INT64) return gs_error("index_select(): Expected dtype int64 for index, got %s", gs_dtype_name(idx->dtype));
  if (idx->ndim > 1) return gs_error("index_select(): Index is supposed to be a vector");
  const gs_backend *be;
  GS_DISPATCH(be, x, index_select, "index_select");
  gs_tensor *cx;
  GS_TRY(gs_contiguous(x, &cx));
  int64_t shape[GS_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  int nd = x->ndim;
  if (nd == 0) { nd = 1; shape[0] = 1; }
  shape[dim] = gs_numel(idx);
  gs_tensor *r;
  gs_status s = gs_tensor_empty(gs_tensor_device(x), x->dtype, x->ndim, shape, &r);
  if (s == GS_OK) { gs_log_op("index_select", x); s = be->index_select(r, cx, dim, idx); }
  gs_tensor_release(cx);
  if (s != GS_OK) { gs_tensor_release(r); return s; }
  *out = r;
  return GS_OK;
}
