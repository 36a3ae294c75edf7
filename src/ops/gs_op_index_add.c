/* gs_op_index_add.c: index_add into zeros, the backward of index_select
 * (and so of nn.Embedding, x[mask] and torch.where, issue 31). Kernels
 * see float32 or float64 only: other float dtypes go through float32. */
#include <string.h>
#include "ops/gs_ops.h"

gs_status gs_index_add(const gs_tensor *src, int dim, const gs_tensor *idx, int ndim, const int64_t *shape,
                       gs_tensor **out) {
  GS_TRY(gs_check_same_device(src, idx));
  if (idx->dtype != GS_INT64 || idx->ndim > 1) return gs_error("index_add: expected a 1-d int64 index");
  if (!gs_dtype_is_float(src->dtype))
    return gs_error("index_add: expected a floating-point source, got %s", gs_dtype_name(src->dtype));
  const gs_backend *be;
  GS_DISPATCH(be, src, index_add, "index_add");
  gs_dtype kt = src->dtype == GS_FLOAT64 ? GS_FLOAT64 : GS_FLOAT32;
  gs_tensor *cs = NULL, *r = NULL;
  gs_status s = src->dtype == kt ? gs_contiguous(src, &cs) : gs_cast(src, kt, &cs);
  if (s == GS_OK && !gs_is_contiguous(cs)) {
    gs_tensor *c2;
    s = gs_contiguous(cs, &c2);
    if (s == GS_OK) { gs_tensor_release(cs); cs = c2; }
  }
  if (s == GS_OK) s = gs_full(gs_tensor_device(src), kt, ndim, shape, gs_scalar_i(0), &r);
  if (s == GS_OK) { gs_log_op("index_add_", src); s = be->index_add(r, dim, idx, cs); }
  gs_tensor_release(cs);
  if (s == GS_OK && kt != src->dtype) {
    gs_tensor *back;
    s = gs_cast(r, src->dtype, &back);
    gs_tensor_release(r);
    r = s == GS_OK ? back : NULL;
  }
  if (s != GS_OK) { gs_tensor_release(r); return s; }
  *out = r;
  return GS_OK;
}
