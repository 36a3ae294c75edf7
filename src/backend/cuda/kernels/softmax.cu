/* softmax.cu: softmax and log_softmax of a contiguous float32/float64
 * input along one dim, viewed as [outer, R, inner] -- the CUDA version of
 * cpu_reduce.c's softmax with the same steps: the row maximum (NaN wins;
 * an all -inf row uses 0), the sum of exp(x - max) in double, then
 * x - max - log(sum) or exp(x - max) * (1 / sum) in the input's type.
 * Rows along the last dim (inner == 1) get a warp each, or a block when
 * long; other dims get a thread per column. */
#include "backend/cuda/kernels/common.cuh"

__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }

template <typename T>
__device__ __forceinline__ T nan_max(T a, T b) { return a != a ? a : b != b ? b : a > b ? a : b; }

template <typename T>
__device__ __forceinline__ T warp_max(T v) {
#pragma unroll
  for (int o = GS_WARP / 2; o > 0; o /= 2) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = GS_WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* The output pass, shared by every layout. */
template <typename T>
__device__ __forceinline__ T softmax_out(T x, T mx, T ls, T inv, bool take_log) {
  return take_log ? x - mx - ls : m_exp(x - mx) * inv;
}

/* inner == 1, short rows: warp w handles row w (looping over rows). */
template <typename T>
__global__ void softmax_warp_rows(T *out, const T *x, int64_t rows, int64_t r, bool take_log) {
  int lane = threadIdx.x % GS_WARP;
  int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / GS_WARP;
  int64_t nwarps = (int64_t)gridDim.x * blockDim.x / GS_WARP;
  for (int64_t row = warp; row < rows; row += nwarps) {
    const T *p = x + row * r;
    T *o = out + row * r;
    T mx = -INFINITY;
    for (int64_t j = lane; j < r; j += GS_WARP) mx = nan_max(mx, p[j]);
    mx = warp_max(mx);
    if (mx == -INFINITY) mx = 0;
    double sum = 0;
    for (int64_t j = lane; j < r; j += GS_WARP) sum += (double)m_exp(p[j] - mx);
    sum = warp_sum(sum);
    T ls = (T)log(sum), inv = (T)(1.0 / sum);
    for (int64_t j = lane; j < r; j += GS_WARP) o[j] = softmax_out(p[j], mx, ls, inv, take_log);
  }
}

/* inner == 1, long rows: block b handles row b (looping over rows). */
template <typename T>
__global__ void softmax_block_rows(T *out, const T *x, int64_t rows, int64_t r, bool take_log) {
  __shared__ T smax[GS_BLOCK / GS_WARP];
  __shared__ double ssum[GS_BLOCK / GS_WARP];
  int lane = threadIdx.x % GS_WARP, w = threadIdx.x / GS_WARP, nw = blockDim.x / GS_WARP;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *p = x + row * r;
    T *o = out + row * r;
    T mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < r; j += blockDim.x) mx = nan_max(mx, p[j]);
    mx = warp_max(mx);
    if (lane == 0) smax[w] = mx;
    __syncthreads();
    mx = lane < nw ? smax[lane] : (T)-INFINITY;
    mx = warp_max(mx); /* every warp reduces the partials: all threads agree */
    if (mx == -INFINITY) mx = 0;
    double sum = 0;
    for (int64_t j = threadIdx.x; j < r; j += blockDim.x) sum += (double)m_exp(p[j] - mx);
    sum = warp_sum(sum);
    if (lane == 0) ssum[w] = sum;
    __syncthreads();
    sum = lane < nw ? ssum[lane] : 0.0;
    sum = warp_sum(sum);
    T ls = (T)log(sum), inv = (T)(1.0 / sum);
    for (int64_t j = threadIdx.x; j < r; j += blockDim.x) o[j] = softmax_out(p[j], mx, ls, inv, take_log);
    __syncthreads(); /* smax/ssum are rewritten for the next row */
  }
}

/* inner > 1: thread c handles column c = (o, k), elements at stride inner. */
template <typename T>
__global__ void softmax_cols(T *out, const T *x, int64_t ncols, int64_t r, int64_t inner, bool take_log) {
  GS_GRID_LOOP(c, ncols) {
    int64_t o = c / inner, k = c % inner;
    const T *p = x + o * r * inner + k;
    T *q = out + o * r * inner + k;
    T mx = -INFINITY;
    for (int64_t j = 0; j < r; j++) mx = nan_max(mx, p[j * inner]);
    if (mx == -INFINITY) mx = 0;
    double sum = 0;
    for (int64_t j = 0; j < r; j++) sum += (double)m_exp(p[j * inner] - mx);
    T ls = (T)log(sum), inv = (T)(1.0 / sum);
    for (int64_t j = 0; j < r; j++) q[j * inner] = softmax_out(p[j * inner], mx, ls, inv, take_log);
  }
}

template <typename T>
static gs_status launch(cudaStream_t st, T *out, const T *x, int64_t outer, int64_t r, int64_t inner, bool take_log) {
  if (inner == 1 && r <= 1024) {
    int64_t threads = outer * GS_WARP;
    softmax_warp_rows<T><<<gs_grid(threads), GS_BLOCK, 0, st>>>(out, x, outer, r, take_log);
  } else if (inner == 1) {
    unsigned blocks = (unsigned)(outer < GS_MAX_GRID ? outer : GS_MAX_GRID);
    softmax_block_rows<T><<<blocks, GS_BLOCK, 0, st>>>(out, x, outer, r, take_log);
  } else {
    softmax_cols<T><<<gs_grid(outer * inner), GS_BLOCK, 0, st>>>(out, x, outer * inner, r, inner, take_log);
  }
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

extern "C" gs_status gs_cuda_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log) {
  int64_t outer = 1, r = 1, inner = 1;
  if (dim < 0) r = gs_numel(x);
  else {
    for (int d = 0; d < dim; d++) outer *= x->shape[d];
    r = x->shape[dim];
    for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
  }
  if (outer * r * inner == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  switch (x->dtype) {
  case GS_FLOAT32: return launch<float>(st, (float *)gs_tensor_ptr(out), (const float *)gs_tensor_ptr(x), outer, r, inner, log);
  case GS_FLOAT64: return launch<double>(st, (double *)gs_tensor_ptr(out), (const double *)gs_tensor_ptr(x), outer, r, inner, log);
  default: return gs_error("softmax: no CUDA kernel for %s", gs_dtype_name(x->dtype));
  }
}
