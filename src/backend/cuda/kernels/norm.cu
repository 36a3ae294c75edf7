/* norm.cu: batch normalisation's kernels for contiguous float32/float64
 * x [N, C, S] (contracts in gs_backend.h), the CUDA versions of
 * cpu_norm.c.
 *
 * Statistics and backward sums: one block per channel. Each thread adds
 * the values i = t, t + blockDim, ... of the channel's N*S values in
 * double, then the block adds its threads' partials as a fixed tree in
 * shared memory: the order never depends on timing, so the results are
 * the same on every run (no atomics). Two passes for the variance (the
 * mean first), as on the CPU. The affine map is one thread per element. */
#include "backend/cuda/kernels/common.cuh"

#define NORM_BLOCK 256

/* Value i of channel c's N*S values. */
template <typename T>
__device__ __forceinline__ double chan_at(const T *x, int64_t i, int64_t c, int64_t C, int64_t S) {
  int64_t n = i / S, s = i % S;
  return (double)x[(n * C + c) * S + s];
}

/* Sum of the block's v (every thread gets it): a fixed tree. */
__device__ __forceinline__ double block_sum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int half = NORM_BLOCK / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads(); /* sh is reused by the next sum */
  return r;
}

template <typename T>
__global__ void __launch_bounds__(NORM_BLOCK) bn_stats_k(T *stats, const T *x, int64_t N, int64_t C, int64_t S) {
  __shared__ double sh[NORM_BLOCK];
  int64_t m = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double acc = 0;
    for (int64_t i = threadIdx.x; i < m; i += NORM_BLOCK) acc += chan_at(x, i, c, C, S);
    double mean = block_sum(acc, sh) / (double)m;
    acc = 0;
    for (int64_t i = threadIdx.x; i < m; i += NORM_BLOCK) {
      double d = chan_at(x, i, c, C, S) - mean;
      acc += d * d;
    }
    double var = block_sum(acc, sh) / (double)m;
    if (threadIdx.x == 0) {
      stats[c] = (T)mean;
      stats[C + c] = (T)var;
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(NORM_BLOCK) bn_reduce_k(T *sums, const T *gy, const T *x, const T *mean, int64_t N,
                                                          int64_t C, int64_t S) {
  __shared__ double sh[NORM_BLOCK];
  int64_t m = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double mu = (double)mean[c], s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < m; i += NORM_BLOCK) {
      double g = chan_at(gy, i, c, C, S);
      s1 += g;
      s2 += g * (chan_at(x, i, c, C, S) - mu);
    }
    s1 = block_sum(s1, sh);
    s2 = block_sum(s2, sh);
    if (threadIdx.x == 0) {
      sums[c] = (T)s1;
      sums[C + c] = (T)s2;
    }
  }
}

/* out = k0 * a + k1 * (x - k2) + k3 per channel; a may be NULL */
template <typename T>
__global__ void bn_elemt_k(T *out, const T *a, const T *x, const T *k, int64_t n, int64_t C, int64_t S) {
  GS_GRID_LOOP(e, n) {
    int64_t c = (e / S) % C;
    T v = k[C + c] * (x[e] - k[2 * C + c]);
    out[e] = (a ? k[c] * a[e] + v : v) + k[3 * C + c];
  }
}

struct ncs { int64_t n, c, s; };

static ncs layout(const gs_tensor *x) {
  ncs l = {x->shape[0], x->ndim > 1 ? x->shape[1] : 1, 1};
  for (int d = 2; d < x->ndim; d++) l.s *= x->shape[d];
  return l;
}

static unsigned channel_blocks(int64_t c) { return (unsigned)(c < GS_MAX_GRID ? (c < 1 ? 1 : c) : GS_MAX_GRID); }

#define BY_DTYPE(t, what, call)                                                    \
  do {                                                                            \
    if ((t)->dtype == GS_FLOAT32) { typedef float T; call; }                      \
    else if ((t)->dtype == GS_FLOAT64) { typedef double T; call; }                \
    else return gs_error("%s: no CUDA kernel for %s", what, gs_dtype_name((t)->dtype)); \
  } while (0)

extern "C" gs_status gs_cuda_bn_stats(gs_tensor *stats, const gs_tensor *x) {
  ncs l = layout(x);
  if (l.c == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  BY_DTYPE(x, "batch_norm_stats",
           (bn_stats_k<T><<<channel_blocks(l.c), NORM_BLOCK, 0, st>>>((T *)gs_tensor_ptr(stats),
                                                                    (const T *)gs_tensor_ptr(x), l.n, l.c, l.s)));
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

extern "C" gs_status gs_cuda_bn_reduce(gs_tensor *sums, const gs_tensor *gy, const gs_tensor *x,
                                       const gs_tensor *mean) {
  ncs l = layout(x);
  if (l.c == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  BY_DTYPE(x, "batch_norm_backward_reduce",
           (bn_reduce_k<T><<<channel_blocks(l.c), NORM_BLOCK, 0, st>>>(
             (T *)gs_tensor_ptr(sums), (const T *)gs_tensor_ptr(gy), (const T *)gs_tensor_ptr(x),
             (const T *)gs_tensor_ptr(mean), l.n, l.c, l.s)));
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

extern "C" gs_status gs_cuda_bn_elemt(gs_tensor *out, const gs_tensor *a, const gs_tensor *x, const gs_tensor *k) {
  ncs l = layout(x);
  int64_t n = gs_numel(x);
  if (n == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  BY_DTYPE(x, "batch_norm_elemt",
           (bn_elemt_k<T><<<gs_grid(n), GS_BLOCK, 0, st>>>((T *)gs_tensor_ptr(out),
                                                          a ? (const T *)gs_tensor_ptr(a) : (const T *)NULL,
                                                          (const T *)gs_tensor_ptr(x), (const T *)gs_tensor_ptr(k),
                                                          n, l.c, l.s)));
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}
