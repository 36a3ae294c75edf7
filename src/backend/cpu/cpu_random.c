/* cpu_random.c: fills from the shared Philox stream (gs_philox.h). */
#include "backend/cpu/cpu_random.h"
#include "core/gs_parallel.h"
#include "core/gs_philox.h"

typedef struct { char *p; gs_dtype dt; gs_random_spec r; uint64_t seed, offset, width; } random_job;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GS_PHILOX_AVX2 1

/* The high 32 bits of a * m for each 32-bit lane: the even lanes' and the
 * odd lanes' 64-bit products, high halves put back in lane order. */
__attribute__((target("avx2"))) static inline __m256i mulhi_epu32(__m256i a, __m256i m) {
  __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(a, m), 32);
  __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  return _mm256_or_si256(even, _mm256_and_si256(odd, _mm256_set1_epi64x((long long)0xFFFFFFFF00000000ull)));
}

/* float32 uniforms for counters offset + begin .. offset + end - 1, eight
 * Philox4x32-10 blocks at once: gs_philox's rounds lane by lane (word 0,
 * gs_philox_uniform_f32's), so every value is the scalar loop's. Dropout
 * masks drew a third of a transformer block's training step one counter
 * at a time. */
__attribute__((target("avx2"))) static void uniform_f32_avx2(const random_job *j, int64_t begin, int64_t end) {
  const __m256i m0 = _mm256_set1_epi32((int)0xD2511F53u), m1 = _mm256_set1_epi32((int)0xCD9E8D57u);
  const __m256i w0 = _mm256_set1_epi32((int)0x9E3779B9u), w1 = _mm256_set1_epi32((int)0xBB67AE85u);
  double a = j->r.a, b = j->r.b;
  float *p = (float *)j->p;
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    uint32_t lo[8], hi[8], out[8];
    for (int l = 0; l < 8; l++) {
      uint64_t c = j->offset + (uint64_t)(i + l);
      lo[l] = (uint32_t)c; hi[l] = (uint32_t)(c >> 32);
    }
    __m256i c0 = _mm256_loadu_si256((const __m256i *)lo), c1 = _mm256_loadu_si256((const __m256i *)hi);
    __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
    __m256i k0 = _mm256_set1_epi32((int)(uint32_t)j->seed), k1 = _mm256_set1_epi32((int)(uint32_t)(j->seed >> 32));
    for (int round = 0; round < 10; round++) {
      __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(mulhi_epu32(c2, m1), c1), k0);
      __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(mulhi_epu32(c0, m0), c3), k1);
      c1 = _mm256_mullo_epi32(c2, m1);
      c3 = _mm256_mullo_epi32(c0, m0);
      c0 = n0; c2 = n2;
      k0 = _mm256_add_epi32(k0, w0); k1 = _mm256_add_epi32(k1, w1);
    }
    _mm256_storeu_si256((__m256i *)out, c0);
    for (int l = 0; l < 8; l++) p[i + l] = (float)(a + (b - a) * ((float)(out[l] >> 8) * (1.0f / 16777216.0f)));
  }
  for (; i < end; i++) p[i] = (float)(a + (b - a) * gs_philox_uniform_f32(j->seed, j->offset + (uint64_t)i));
}
#endif

static void random_range(int64_t begin, int64_t end, void *arg) {
  const random_job *j = arg;
#ifdef GS_PHILOX_AVX2
  if (j->r.kind == GS_RAND_UNIFORM && j->dt == GS_FLOAT32 && __builtin_cpu_supports("avx2")) {
    uniform_f32_avx2(j, begin, end);
    return;
  }
#endif
  double a = j->r.a, b = j->r.b;
  for (int64_t i = begin; i < end; i++) {
    uint64_t c = j->offset + (uint64_t)i;
    switch (j->r.kind) {
    case GS_RAND_UNIFORM:
      if (j->dt == GS_FLOAT32) ((float *)j->p)[i] = (float)(a + (b - a) * gs_philox_uniform_f32(j->seed, c));
      else ((double *)j->p)[i] = a + (b - a) * gs_philox_uniform_f64(j->seed, c);
      break;
    case GS_RAND_NORMAL:
      if (j->dt == GS_FLOAT32) ((float *)j->p)[i] = (float)(a + b * gs_philox_normal(j->seed, c));
      else ((double *)j->p)[i] = a + b * gs_philox_normal(j->seed, c);
      break;
    case GS_RAND_INT:
      ((int64_t *)j->p)[i] = gs_philox_randint(j->seed, c, j->r.lo, j->width);
      break;
    }
  }
}

gs_status gs_cpu_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset) {
  int64_t n = gs_numel(dst);
  if (r->kind == GS_RAND_INT && !(r->lo < r->hi))
    return gs_error("random: empty integer range [%lld, %lld)", (long long)r->lo, (long long)r->hi);
  random_job j = {gs_tensor_ptr(dst), dst->dtype, *r, seed, offset, gs_randint_width(r->lo, r->hi)};
  return gs_parallel_for(n, n * 16, random_range, &j);
}
