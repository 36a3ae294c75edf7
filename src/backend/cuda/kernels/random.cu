/* random.cu: uniform, normal and integer fills from the shared Philox
 * stream (src/core/gs_philox.h, compiled here as __host__ __device__ code):
 * element i of a draw with (seed, offset) depends only on (seed,
 * offset + i), so a seed gives the same numbers as cpu_random.c. Uniform
 * and integer draws are bit-identical; normal draws use the device's
 * double log/sqrt/cos, which may differ from the host's libm in the last
 * bit of a float64. a + (b - a) * u is rounded step by step (__dmul_rn,
 * __dadd_rn) because nvcc would otherwise fuse it into one FMA and round
 * differently from the host. */
#include "backend/cuda/kernels/common.cuh"
#include "core/gs_philox.h"

template <typename T>
__global__ void uniform_kernel(T *dst, int64_t n, uint64_t seed, uint64_t offset, double a, double b) {
  GS_GRID_LOOP(i, n) {
    uint64_t c = offset + (uint64_t)i;
    double u = sizeof(T) == 4 ? (double)gs_philox_uniform_f32(seed, c) : gs_philox_uniform_f64(seed, c);
    dst[i] = (T)__dadd_rn(a, __dmul_rn(b - a, u));
  }
}

template <typename T>
__global__ void normal_kernel(T *dst, int64_t n, uint64_t seed, uint64_t offset, double mean, double std) {
  GS_GRID_LOOP(i, n) dst[i] = (T)__dadd_rn(mean, __dmul_rn(std, gs_philox_normal(seed, offset + (uint64_t)i)));
}

/* integers in [lo, lo + width) by the CPU's rule (gs_philox_randint) */
__global__ void int_kernel(int64_t *dst, int64_t n, uint64_t seed, uint64_t offset, int64_t lo, uint64_t width) {
  GS_GRID_LOOP(i, n) dst[i] = gs_philox_randint(seed, offset + (uint64_t)i, lo, width);
}

extern "C" gs_status gs_cuda_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset) {
  int64_t n = gs_numel(dst);
  if (n == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(dst, &st));
  unsigned g = gs_grid(n);
  void *p = gs_tensor_ptr(dst);
  bool f32 = dst->dtype == GS_FLOAT32;
  double a = r->a, b = r->b;
  switch (r->kind) {
  case GS_RAND_UNIFORM:
    if (f32) uniform_kernel<float><<<g, GS_BLOCK, 0, st>>>((float *)p, n, seed, offset, a, b);
    else uniform_kernel<double><<<g, GS_BLOCK, 0, st>>>((double *)p, n, seed, offset, a, b);
    break;
  case GS_RAND_NORMAL:
    if (f32) normal_kernel<float><<<g, GS_BLOCK, 0, st>>>((float *)p, n, seed, offset, a, b);
    else normal_kernel<double><<<g, GS_BLOCK, 0, st>>>((double *)p, n, seed, offset, a, b);
    break;
  case GS_RAND_INT:
    if (!(r->lo < r->hi)) return gs_error("random: empty integer range [%lld, %lld)", (long long)r->lo, (long long)r->hi);
    int_kernel<<<g, GS_BLOCK, 0, st>>>((int64_t *)p, n, seed, offset, r->lo, gs_randint_width(r->lo, r->hi));
    break;
  default: return gs_error("random: unknown kind %d", (int)r->kind);
  }
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}
