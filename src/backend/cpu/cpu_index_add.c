/* cpu_index_add.c: the index_add slot, index_select's backward: rows of
 * src added into out at the indices. The indices run in order, so
 * repeated ones add up in a fixed order (the same sums every run). */
#include "backend/cpu/cpu_copy.h"

#define ADD_ROWS(T)                                                            \
  static void add_##T(T *dst, const T *src, const int64_t *ix, int64_t istride, \
                      int64_t outer, int64_t size, int64_t nidx, int64_t inner) { \
    for (int64_t o = 0; o < outer; o++)                                        \
      for (int64_t j = 0; j < nidx; j++) {                                     \
        T *d = dst + (o * size + ix[j * istride]) * inner;                     \
        const T *s = src + (o * nidx + j) * inner;                             \
        for (int64_t k = 0; k < inner; k++) d[k] += s[k];                      \
      }                                                                        \
  }
ADD_ROWS(float)
ADD_ROWS(double)

gs_status gs_cpu_index_add(gs_tensor *out, int dim, const gs_tensor *idx, const gs_tensor *src) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; d++) outer *= out->shape[d];
  for (int d = dim + 1; d < out->ndim; d++) inner *= out->shape[d];
  int64_t size = out->ndim ? out->shape[dim] : 1, nidx = gs_numel(idx);
  int64_t istride = idx->ndim ? idx->stride[0] : 0;
  if (outer * nidx * inner == 0) return GS_OK; /* empty: there may be no buffers */
  const int64_t *ix = (const int64_t *)gs_tensor_ptr(idx);
  if (out->dtype == GS_FLOAT32)
    add_float((float *)gs_tensor_ptr(out), (const float *)gs_tensor_ptr(src), ix, istride, outer, size, nidx, inner);
  else if (out->dtype == GS_FLOAT64)
    add_double((double *)gs_tensor_ptr(out), (const double *)gs_tensor_ptr(src), ix, istride, outer, size, nidx, inner);
  else
    return gs_error("index_add: no cpu kernel for %s", gs_dtype_name(out->dtype));
  return GS_OK;
}
