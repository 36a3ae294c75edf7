/* reduce.cu: sum, prod, max, min, argmax and argmin of a contiguous input
 * viewed as [outer, R, inner] (R the reduced extent; the whole tensor is
 * [1, numel, 1]), the CUDA version of cpu_reduce.c. Floats accumulate in
 * double, int64 wraps; max and min let NaN win and, among equal values,
 * report the first position, as the CPU does.
 *
 * Every (value, position) pair is combined with one associative rule, so
 * the work splits freely: long rows along the last dim (inner == 1) get
 * a block each, anything else a thread per output column; when that
 * leaves the GPU idle (few long rows, e.g. a whole-tensor sum) R is split
 * into chunks whose partial results a second kernel combines in order, so
 * results are deterministic. */
#include <type_traits>
#include "backend/cuda/kernels/common.cuh"

template <typename ACC> struct rpair { ACC v; int64_t i; };

/* The combination rules. Positions break ties: the smaller one wins. */
template <typename ACC, int K>
__device__ __forceinline__ rpair<ACC> identity() {
  rpair<ACC> p;
  p.i = (K == GS_R_SUM || K == GS_R_PROD) ? 0 : INT64_MAX;
  if constexpr (K == GS_R_SUM) p.v = 0;
  else if constexpr (K == GS_R_PROD) p.v = 1;
  else if constexpr (std::is_integral<ACC>::value) p.v = K == GS_R_MAX ? INT64_MIN : INT64_MAX;
  else p.v = K == GS_R_MAX ? -INFINITY : INFINITY;
  return p;
}

template <typename ACC, int K>
__device__ __forceinline__ rpair<ACC> combine(rpair<ACC> a, rpair<ACC> b) {
  constexpr bool is_int = std::is_integral<ACC>::value;
  if constexpr (K == GS_R_SUM) {
    if constexpr (is_int) a.v = (ACC)((uint64_t)a.v + (uint64_t)b.v); else a.v += b.v;
    return a;
  } else if constexpr (K == GS_R_PROD) {
    if constexpr (is_int) a.v = (ACC)((uint64_t)a.v * (uint64_t)b.v); else a.v *= b.v;
    return a;
  } else {
    bool an = a.v != a.v, bn = b.v != b.v; /* always false for integers */
    if (an || bn) return an && bn ? (a.i <= b.i ? a : b) : an ? a : b;
    bool a_better = K == GS_R_MAX ? a.v > b.v : a.v < b.v;
    bool b_better = K == GS_R_MAX ? b.v > a.v : b.v < a.v;
    if (a_better) return a;
    if (b_better) return b;
    return a.i <= b.i ? a : b;
  }
}

template <typename ACC, int K>
__device__ __forceinline__ rpair<ACC> warp_reduce(rpair<ACC> p) {
#pragma unroll
  for (int o = GS_WARP / 2; o > 0; o /= 2) {
    rpair<ACC> q;
    q.v = __shfl_down_sync(0xffffffffu, p.v, o);
    q.i = __shfl_down_sync(0xffffffffu, p.i, o);
    p = combine<ACC, K>(p, q); /* lower lanes hold lower positions: order kept */
  }
  return p;
}

/* Reduces over the block; the result is valid in thread 0. blockDim.x is
 * a multiple of the warp size. */
template <typename ACC, int K>
__device__ __forceinline__ rpair<ACC> block_reduce(rpair<ACC> p) {
  __shared__ rpair<ACC> warps[GS_BLOCK / GS_WARP];
  int lane = threadIdx.x % GS_WARP, w = threadIdx.x / GS_WARP, nw = blockDim.x / GS_WARP;
  p = warp_reduce<ACC, K>(p);
  if (lane == 0) warps[w] = p;
  __syncthreads();
  if (w == 0) {
    p = lane < nw ? warps[lane] : identity<ACC, K>();
    p = warp_reduce<ACC, K>(p);
  }
  __syncthreads(); /* warps[] may be reused by the caller's next row */
  return p;
}

/* The final value of output c: the value (in x's type), or the position
 * for arg*, plus the position into idx when asked (max(d), min(d)). */
template <typename T, typename ACC>
__device__ __forceinline__ void write_result(void *out, int64_t *idx, bool want_index, int64_t c, rpair<ACC> p) {
  if (want_index) ((int64_t *)out)[c] = p.i;
  else ((T *)out)[c] = (T)p.v;
  if (idx) idx[c] = p.i;
}

/* inner == 1: block b handles chunk b % splits of row b / splits. */
template <typename T, typename ACC, int K>
__global__ void reduce_rows(const T *x, int64_t rows, int64_t r, int splits, int64_t chunk, rpair<ACC> *partial,
                            void *out, int64_t *idx, bool want_index) {
  for (int64_t b = blockIdx.x; b < rows * splits; b += gridDim.x) {
    int64_t row = b / splits, lo = (b % splits) * chunk, hi = lo + chunk < r ? lo + chunk : r;
    const T *p = x + row * r;
    rpair<ACC> acc = identity<ACC, K>();
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
      rpair<ACC> e = {(ACC)p[j], j};
      acc = combine<ACC, K>(acc, e);
    }
    acc = block_reduce<ACC, K>(acc);
    if (threadIdx.x == 0) {
      if (splits == 1) write_result<T, ACC>(out, idx, want_index, row, acc);
      else partial[b] = acc;
    }
  }
}

/* inner > 1: thread g handles chunk g / ncols of column g % ncols
 * (neighbouring threads read neighbouring columns: coalesced). */
template <typename T, typename ACC, int K>
__global__ void reduce_cols(const T *x, int64_t ncols, int64_t r, int64_t inner, int splits, int64_t chunk,
                            rpair<ACC> *partial, void *out, int64_t *idx, bool want_index) {
  GS_GRID_LOOP(g, ncols * splits) {
    int64_t s = g / ncols, c = g % ncols, o = c / inner, k = c % inner;
    int64_t lo = s * chunk, hi = lo + chunk < r ? lo + chunk : r;
    const T *p = x + o * r * inner + k;
    rpair<ACC> acc = identity<ACC, K>();
    for (int64_t j = lo; j < hi; j++) {
      rpair<ACC> e = {(ACC)p[j * inner], j};
      acc = combine<ACC, K>(acc, e);
    }
    if (splits == 1) write_result<T, ACC>(out, idx, want_index, c, acc);
    else partial[c * splits + s] = acc;
  }
}

/* Combines each output's partial results in chunk order. */
template <typename T, typename ACC, int K>
__global__ void reduce_finish(const rpair<ACC> *partial, int64_t nout, int splits, void *out, int64_t *idx,
                              bool want_index) {
  GS_GRID_LOOP(c, nout) {
    rpair<ACC> acc = identity<ACC, K>();
    for (int s = 0; s < splits; s++) acc = combine<ACC, K>(acc, partial[c * splits + s]);
    write_result<T, ACC>(out, idx, want_index, c, acc);
  }
}

/* How the work is cut: splits chunks of R per output. */
struct plan {
  int64_t outer, r, inner, nout;
  int splits;
  int64_t chunk;
  bool by_rows; /* block-per-row kernel; else thread-per-column */
};

static plan make_plan(const gs_tensor *x, int dim) {
  plan p;
  p.outer = 1; p.r = 1; p.inner = 1;
  if (dim < 0) p.r = gs_numel(x);
  else {
    for (int d = 0; d < dim; d++) p.outer *= x->shape[d];
    p.r = x->shape[dim];
    for (int d = dim + 1; d < x->ndim; d++) p.inner *= x->shape[d];
  }
  p.nout = p.outer * p.inner;
  /* short rows are cheaper a thread each than a block each */
  p.by_rows = p.inner == 1 && (p.r >= 128 || p.nout < 1024);
  int64_t want; /* chunks per output that keep the GPU busy */
  if (p.by_rows) want = p.nout >= 1024 ? 1 : CEIL_DIV(1024, p.nout > 0 ? p.nout : 1);
  else want = p.nout >= 131072 ? 1 : CEIL_DIV(131072, p.nout > 0 ? p.nout : 1);
  int64_t min_chunk = p.by_rows ? GS_BLOCK * 8 : 64; /* not less work than this per chunk */
  int64_t most = CEIL_DIV(p.r, min_chunk);
  if (want > most) want = most;
  if (want > 1024) want = 1024;
  if (want < 1) want = 1;
  p.splits = (int)want;
  p.chunk = CEIL_DIV(p.r, want);
  if (p.chunk < 1) p.chunk = 1;
  return p;
}

template <typename T, typename ACC, int K>
static gs_status run(cudaStream_t st, int index, const plan &p, const T *x, void *out, int64_t *idx,
                     bool want_index) {
  rpair<ACC> *partial = NULL;
  size_t pbytes = (size_t)(p.nout * p.splits) * sizeof(rpair<ACC>);
  if (p.splits > 1) {
    partial = (rpair<ACC> *)gs_cuda_scratch_alloc(index, pbytes);
    if (!partial) return gs_error_code(GS_ERR_OOM, "CUDA out of memory (reduction scratch of %zu bytes)", pbytes);
  }
  if (p.by_rows) {
    int64_t blocks = p.nout * p.splits;
    reduce_rows<T, ACC, K><<<(unsigned)(blocks < GS_MAX_GRID ? blocks : GS_MAX_GRID), GS_BLOCK, 0, st>>>(
        x, p.nout, p.r, p.splits, p.chunk, partial, out, idx, want_index);
  } else {
    reduce_cols<T, ACC, K><<<gs_grid(p.nout * p.splits), GS_BLOCK, 0, st>>>(x, p.nout, p.r, p.inner, p.splits,
                                                                           p.chunk, partial, out, idx, want_index);
  }
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && p.splits > 1) {
    reduce_finish<T, ACC, K><<<gs_grid(p.nout), GS_BLOCK, 0, st>>>(partial, p.nout, p.splits, out, idx, want_index);
    e = cudaGetLastError();
  }
  if (partial) gs_cuda_scratch_free(index, partial, pbytes); /* reuse is stream-ordered */
  if (e != cudaSuccess) return gs_cuda_fail(e, "reduction kernel launch", __FILE__, __LINE__);
  return GS_OK;
}

template <typename T, typename ACC>
static gs_status dispatch(gs_reduce_op op, cudaStream_t st, int index, const plan &p, const gs_tensor *x,
                          gs_tensor *out, gs_tensor *idx) {
  const T *xp = (const T *)gs_tensor_ptr(x);
  void *op_ = gs_tensor_ptr(out);
  int64_t *ip = idx ? (int64_t *)gs_tensor_ptr(idx) : NULL;
  switch (op) {
  case GS_R_SUM: return run<T, ACC, GS_R_SUM>(st, index, p, xp, op_, ip, false);
  case GS_R_PROD: return run<T, ACC, GS_R_PROD>(st, index, p, xp, op_, ip, false);
  case GS_R_MAX: return run<T, ACC, GS_R_MAX>(st, index, p, xp, op_, ip, false);
  case GS_R_MIN: return run<T, ACC, GS_R_MIN>(st, index, p, xp, op_, ip, false);
  case GS_R_ARGMAX: return run<T, ACC, GS_R_MAX>(st, index, p, xp, op_, ip, true);
  case GS_R_ARGMIN: return run<T, ACC, GS_R_MIN>(st, index, p, xp, op_, ip, true);
  default: return gs_error("reduce op %d: no CUDA kernel", (int)op);
  }
}

extern "C" gs_status gs_cuda_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim) {
  plan p = make_plan(x, dim);
  if (p.nout == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  int index = gs_tensor_device(x).index;
  switch (x->dtype) {
  case GS_FLOAT32: return dispatch<float, double>(op, st, index, p, x, out, idx);
  case GS_FLOAT64: return dispatch<double, double>(op, st, index, p, x, out, idx);
  case GS_INT64: return dispatch<int64_t, int64_t>(op, st, index, p, x, out, idx);
  default: return gs_error("reduce op %d: no CUDA kernel for %s", (int)op, gs_dtype_name(x->dtype));
  }
}
