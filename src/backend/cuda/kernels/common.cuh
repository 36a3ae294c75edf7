/* common.cuh: what every kernel file shares: the engine's C headers (with
 * C linkage), the CUDA_CHECK / CUDA_CHECK_LAUNCH / CUBLAS_CHECK macros
 * (defined once in src/backend/cuda/cuda_kernels.h so the C side uses the same ones:
 * they record file, line and message with gs_error and return a
 * gs_status, never abort), block sizes, CEIL_DIV, and the strided-index
 * descriptor behind every elementwise kernel. */
#ifndef GS_COMMON_CUH
#define GS_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "core/gs_backend.h"
}
#include "core/gs_devflag.h"
#include "backend/cuda/cuda_kernels.h" /* has its own extern "C" */

#define GS_BLOCK 256                 /* threads per block, elementwise kernels */
#define GS_WARP 32
#define GS_MAX_GRID (1 << 20)        /* blocks per launch; kernels loop beyond */
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

/* Blocks for n elements at GS_BLOCK threads each (at least 1). */
static inline unsigned gs_grid(int64_t n) {
  int64_t g = CEIL_DIV(n, (int64_t)GS_BLOCK);
  if (g < 1) g = 1;
  if (g > GS_MAX_GRID) g = GS_MAX_GRID;
  return (unsigned)g;
}

/* The stream of the device tensor t lives on (and makes it current). */
static inline gs_status gs_stream_of(const gs_tensor *t, cudaStream_t *st) {
  return gs_cuda_stream(gs_tensor_device(t).index, st);
}

/* ---- strided iteration ----
 * Up to GS_EW_MAX_OPS same-shaped operands (inputs may carry stride 0
 * where broadcast). Dims are coalesced on the host by gs_merge_dims, as
 * for cpu_iter.c: size-1 dims dropped, neighbours merged where every
 * operand allows, and stored innermost first with strides in elements.
 * A contiguous tensor becomes one dim of stride 1. */
#define GS_EW_MAX_OPS 3

struct gs_ew_desc {
  int ndim, nops;
  int64_t shape[GS_MAX_DIMS];
  int64_t stride[GS_EW_MAX_OPS][GS_MAX_DIMS];
};

static inline void gs_ew_build(gs_ew_desc *d, int nops, const gs_tensor *const *ops) {
  d->nops = nops;
  for (int k = 0; k < GS_EW_MAX_OPS; k++)
    for (int i = 0; i < GS_MAX_DIMS; i++) d->stride[k][i] = 0;
  for (int i = 0; i < GS_MAX_DIMS; i++) d->shape[i] = 1;
  d->ndim = gs_merge_dims(nops, ops, d->shape, d->stride);
}

/* True when operand k walks memory densely (one dim of stride 1). */
static inline bool gs_ew_dense(const gs_ew_desc *d, int k) { return d->ndim == 1 && d->stride[k][0] == 1; }

/* Element offsets of linear index i for the first NOPS operands. */
template <int NOPS>
__device__ __forceinline__ void gs_ew_offsets(const gs_ew_desc &d, int64_t i, int64_t *off) {
  if (d.ndim == 1) {
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] = i * d.stride[k][0];
    return;
  }
#pragma unroll
  for (int k = 0; k < NOPS; k++) off[k] = 0;
  for (int dim = 0; dim < d.ndim; dim++) {
    int64_t c = i % d.shape[dim];
    i /= d.shape[dim];
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] += c * d.stride[k][dim];
  }
}

/* Records an error found in the data in the device's record (gs_devflag.h),
 * if none is recorded yet; the host reports it at the next synchronisation.
 * Called only on an error branch. */
__device__ __forceinline__ void gs_flag_raise(gs_devflag *f, int code, int dim, int64_t value, int64_t limit) {
  if (*(volatile int32_t *)&f->code != GS_FLAG_NONE) return;
  if (atomicCAS((int *)&f->code, GS_FLAG_NONE, -1) != GS_FLAG_NONE) return; /* -1: being written */
  f->dim = dim;
  f->value = value;
  f->limit = limit;
  __threadfence();
  atomicExch((int *)&f->code, code);
}

#define GS_GRID_LOOP(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

#endif
