/* index.cu: index_select, the CUDA version of cpu_copy.c's: x and out
 * contiguous, viewed as [outer, size, inner] -> [outer, nidx, inner], idx
 * int64 (0-based, any stride). The bounds check is part of the gather: a
 * thread that meets an index out of range records it in the device's
 * error record (gs_devflag.h) and writes 0, and the error is reported at
 * the next synchronisation -- the host never waits here. */
#include "backend/cuda/kernels/common.cuh"

/* Records in the device's error record an element of ix outside [0, size). */
__global__ void check_kernel(const int64_t *ix, int64_t istride, int64_t nidx, int64_t size, int code, int dim,
                             gs_devflag *flag) {
  GS_GRID_LOOP(j, nidx) {
    int64_t k = ix[j * istride];
    if (k < 0 || k >= size) gs_flag_raise(flag, code, dim, k, size);
  }
}

/* out[o, j, q] = x[o, ix[j], q], one element of width W per thread. */
template <typename W>
__global__ void gather_kernel(W *out, const W *x, const int64_t *ix, int64_t istride, int64_t nidx, int64_t size,
                              int64_t inner, int64_t n, int dim, gs_devflag *flag) {
  GS_GRID_LOOP(e, n) {
    int64_t q = e % inner, t = e / inner, j = t % nidx, o = t / nidx;
    int64_t k = ix[j * istride];
    if (k < 0 || k >= size) {
      gs_flag_raise(flag, GS_FLAG_INDEX_SELECT, dim, k, size);
      out[e] = W(0);
      continue;
    }
    out[e] = x[(o * size + k) * inner + q];
  }
}

/* Rows of inner elements are gathered as 1-, 2-, 4- or 8-byte words. */
static gs_status launch_gather(cudaStream_t st, size_t w, void *out, const void *x, const int64_t *ix,
                               int64_t istride, int64_t nidx, int64_t size, int64_t inner, int64_t n, int dim,
                               gs_devflag *f) {
  unsigned g = gs_grid(n);
  switch (w) {
  case 1: gather_kernel<uint8_t><<<g, GS_BLOCK, 0, st>>>((uint8_t *)out, (const uint8_t *)x, ix, istride, nidx, size, inner, n, dim, f); break;
  case 2: gather_kernel<uint16_t><<<g, GS_BLOCK, 0, st>>>((uint16_t *)out, (const uint16_t *)x, ix, istride, nidx, size, inner, n, dim, f); break;
  case 4: gather_kernel<uint32_t><<<g, GS_BLOCK, 0, st>>>((uint32_t *)out, (const uint32_t *)x, ix, istride, nidx, size, inner, n, dim, f); break;
  default: gather_kernel<uint64_t><<<g, GS_BLOCK, 0, st>>>((uint64_t *)out, (const uint64_t *)x, ix, istride, nidx, size, inner, n, dim, f); break;
  }
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

static gs_status launch_check(cudaStream_t st, int index, const int64_t *ix, int64_t istride, int64_t nidx,
                              int64_t size, int code, int dim) {
  check_kernel<<<gs_grid(nidx), GS_BLOCK, 0, st>>>(ix, istride, nidx, size, code, dim, gs_cuda_flag(index));
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

extern "C" gs_status gs_cuda_index_select(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; d++) outer *= x->shape[d];
  for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
  int64_t size = x->shape[dim], nidx = gs_numel(idx);
  int64_t istride = idx->ndim ? idx->stride[0] : 0;
  const int64_t *ix = (const int64_t *)gs_tensor_ptr(idx);
  if (nidx == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  int index = gs_tensor_device(x).index;
  int64_t n = outer * nidx * inner;
  if (n == 0) /* nothing to gather, but the indices are still checked (as on the CPU) */
    return launch_check(st, index, ix, istride, nidx, size, GS_FLAG_INDEX_SELECT, dim);
  return launch_gather(st, gs_dtype_size(x->dtype), gs_tensor_ptr(out), gs_tensor_ptr(x), ix, istride, nidx, size,
                       inner, n, dim, gs_cuda_flag(index));
}

/* The check_index slot: every element of idx in [0, size), or code is
 * recorded (nll_loss's targets). */
extern "C" gs_status gs_cuda_check_index(const gs_tensor *idx, int64_t size, int code) {
  int64_t nidx = gs_numel(idx);
  if (nidx == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(idx, &st));
  int64_t istride = idx->ndim ? idx->stride[0] : 0;
  return launch_check(st, gs_tensor_device(idx).index, (const int64_t *)gs_tensor_ptr(idx), istride, nidx, size,
                      code, 0);
}

/* The index_add slot (index_select's backward, issue 31): one thread per
 * element of src, added with atomicAdd into its row of out (repeated
 * indices meet there). Float sums of repeated indices may come in any
 * order, as PyTorch's CUDA index_add. */
template <typename T>
__global__ void index_add_kernel(T *out, const T *src, const int64_t *ix, int64_t istride, int64_t nidx,
                                 int64_t size, int64_t inner, int64_t n) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int64_t k = i % inner, j = (i / inner) % nidx, o = i / (inner * nidx);
  atomicAdd(out + (o * size + ix[j * istride]) * inner + k, src[i]);
}

extern "C" gs_status gs_cuda_index_add(gs_tensor *out, int dim, const gs_tensor *idx, const gs_tensor *src) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; d++) outer *= out->shape[d];
  for (int d = dim + 1; d < out->ndim; d++) inner *= out->shape[d];
  int64_t size = out->ndim ? out->shape[dim] : 1, nidx = gs_numel(idx);
  int64_t istride = idx->ndim ? idx->stride[0] : 0, n = outer * nidx * inner;
  if (n == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(out, &st));
  const int64_t *ix = (const int64_t *)gs_tensor_ptr(idx);
  if (out->dtype == GS_FLOAT32)
    index_add_kernel<float><<<gs_grid(n), GS_BLOCK, 0, st>>>((float *)gs_tensor_ptr(out),
      (const float *)gs_tensor_ptr(src), ix, istride, nidx, size, inner, n);
  else if (out->dtype == GS_FLOAT64)
    index_add_kernel<double><<<gs_grid(n), GS_BLOCK, 0, st>>>((double *)gs_tensor_ptr(out),
      (const double *)gs_tensor_ptr(src), ix, istride, nidx, size, inner, n);
  else
    return gs_error("index_add: no CUDA kernel for %s", gs_dtype_name(out->dtype));
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}
