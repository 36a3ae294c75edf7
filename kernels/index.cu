/* index.cu: index_select, the CUDA version of cpu_copy.c's: x and out
 * contiguous, viewed as [outer, size, inner] -> [outer, nidx, inner], idx
 * int64 (0-based, any stride). Indices are checked first on the device;
 * the first bad one (in index order) is read back and reported with the
 * CPU's message, before anything is written. */
#include "common.cuh"

/* Records in *first the smallest position j whose index is out of range. */
__global__ void check_kernel(const int64_t *ix, int64_t istride, int64_t nidx, int64_t size,
                             unsigned long long *first) {
  GS_GRID_LOOP(j, nidx) {
    int64_t k = ix[j * istride];
    if (k < 0 || k >= size) atomicMin(first, (unsigned long long)j);
  }
}

/* out[o, j, q] = x[o, ix[j], q], one element of width W per thread. */
template <typename W>
__global__ void gather_kernel(W *out, const W *x, const int64_t *ix, int64_t istride, int64_t nidx, int64_t size,
                              int64_t inner, int64_t n) {
  GS_GRID_LOOP(e, n) {
    int64_t q = e % inner, t = e / inner, j = t % nidx, o = t / nidx;
    out[e] = x[(o * size + ix[j * istride]) * inner + q];
  }
}

/* Rows of inner elements are gathered as 1-, 2-, 4- or 8-byte words. */
static gs_status launch_gather(cudaStream_t st, size_t w, void *out, const void *x, const int64_t *ix,
                               int64_t istride, int64_t nidx, int64_t size, int64_t inner, int64_t n) {
  unsigned g = gs_grid(n);
  switch (w) {
  case 1: gather_kernel<uint8_t><<<g, GS_BLOCK, 0, st>>>((uint8_t *)out, (const uint8_t *)x, ix, istride, nidx, size, inner, n); break;
  case 2: gather_kernel<uint16_t><<<g, GS_BLOCK, 0, st>>>((uint16_t *)out, (const uint16_t *)x, ix, istride, nidx, size, inner, n); break;
  case 4: gather_kernel<uint32_t><<<g, GS_BLOCK, 0, st>>>((uint32_t *)out, (const uint32_t *)x, ix, istride, nidx, size, inner, n); break;
  default: gather_kernel<uint64_t><<<g, GS_BLOCK, 0, st>>>((uint64_t *)out, (const uint64_t *)x, ix, istride, nidx, size, inner, n); break;
  }
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

/* Checks every index; waits for the answer (the error must name the
 * first bad index, as the CPU's does). */
static gs_status check_indices(cudaStream_t st, int index, const int64_t *ix, int64_t istride, int64_t nidx,
                               int64_t size, int dim) {
  unsigned long long *first = (unsigned long long *)gs_cuda_scratch_alloc(index, sizeof *first);
  if (!first) return gs_error_code(GS_ERR_OOM, "CUDA out of memory (index_select check)");
  unsigned long long host_first = ~0ull;
  int64_t bad = 0;
  gs_status s = GS_OK;
  cudaError_t e = cudaMemsetAsync(first, 0xff, sizeof *first, st);
  if (e == cudaSuccess) {
    check_kernel<<<gs_grid(nidx), GS_BLOCK, 0, st>>>(ix, istride, nidx, size, first);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpyAsync(&host_first, first, sizeof host_first, cudaMemcpyDeviceToHost, st);
  if (e == cudaSuccess) e = cudaStreamSynchronize(st);
  if (e == cudaSuccess && host_first != ~0ull) {
    e = cudaMemcpyAsync(&bad, ix + (int64_t)host_first * istride, sizeof bad, cudaMemcpyDeviceToHost, st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
  }
  if (e != cudaSuccess) s = gs_cuda_fail(e, "index_select bounds check", __FILE__, __LINE__);
  gs_cuda_scratch_free(index, first, sizeof *first);
  if (s == GS_OK && host_first != ~0ull)
    return gs_error("index %lld is out of bounds for dimension %d with size %lld (valid: 1 to %lld)",
                    (long long)bad + 1, dim + 1, (long long)size, (long long)size); /* 1-based, as Lua passed them */
  return s;
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
  GS_TRY(check_indices(st, gs_tensor_device(x).index, ix, istride, nidx, size, dim));
  int64_t n = outer * nidx * inner;
  if (n == 0) return GS_OK;
  return launch_gather(st, gs_dtype_size(x->dtype), gs_tensor_ptr(out), gs_tensor_ptr(x), ix, istride, nidx, size,
                       inner, n);
}
