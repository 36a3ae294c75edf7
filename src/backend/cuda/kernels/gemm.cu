/* gemm.cu: int64 batched matrix products (cuBLAS has none): c[z] = a[z] @
 * b[z] for a [B, M, K] and b [B, K, N] with any strides (batch stride 0
 * when broadcast), c [B, M, N] contiguous. Products and sums wrap like the
 * CPU's (unsigned arithmetic). A 16x16 tile of c per block, with tiles of
 * a and b staged through shared memory. Float products go to cuBLAS
 * (src/backend/cuda/cuda_blas.c). */
#include "backend/cuda/kernels/common.cuh"

#define TILE 16

struct mat3 { int64_t s0, s1, s2; }; /* strides in elements */

__global__ void gemm_i64_kernel(int64_t *c, const int64_t *a, mat3 sa, const int64_t *b, mat3 sb, int64_t B,
                                int64_t M, int64_t N, int64_t K) {
  __shared__ uint64_t ta[TILE][TILE], tb[TILE][TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t tiles_m = CEIL_DIV(M, TILE), tiles_n = CEIL_DIV(N, TILE);
  int64_t ntiles = B * tiles_m * tiles_n;
  for (int64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
    int64_t z = t / (tiles_m * tiles_n), rem = t % (tiles_m * tiles_n);
    int64_t i = (rem / tiles_n) * TILE + ty, j = (rem % tiles_n) * TILE + tx;
    const int64_t *az = a + z * sa.s0, *bz = b + z * sb.s0;
    uint64_t acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += TILE) {
      int64_t ka = k0 + tx, kb = k0 + ty;
      ta[ty][tx] = i < M && ka < K ? (uint64_t)az[i * sa.s1 + ka * sa.s2] : 0;
      tb[ty][tx] = kb < K && j < N ? (uint64_t)bz[kb * sb.s1 + j * sb.s2] : 0;
      __syncthreads();
#pragma unroll
      for (int k = 0; k < TILE; k++) acc += ta[ty][k] * tb[k][tx];
      __syncthreads();
    }
    if (i < M && j < N) c[(z * M + i) * N + j] = (int64_t)acc;
  }
}

extern "C" gs_status gs_cuda_gemm_i64(gs_tensor *c, const gs_tensor *a, const gs_tensor *b) {
  int64_t B = c->shape[0], M = c->shape[1], N = c->shape[2], K = a->shape[2];
  if (B == 0 || M == 0 || N == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(c, &st));
  mat3 sa = {a->stride[0], a->stride[1], a->stride[2]}, sb = {b->stride[0], b->stride[1], b->stride[2]};
  int64_t ntiles = B * CEIL_DIV(M, TILE) * CEIL_DIV(N, TILE);
  dim3 block(TILE, TILE);
  gemm_i64_kernel<<<(unsigned)(ntiles < GS_MAX_GRID ? ntiles : GS_MAX_GRID), block, 0, st>>>(
      (int64_t *)gs_tensor_ptr(c), (const int64_t *)gs_tensor_ptr(a), sa, (const int64_t *)gs_tensor_ptr(b), sb, B, M,
      N, K);
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}
