/* gs_philox.h: Philox4x32-10, the counter-based generator every device
 * shares: element i of a draw with (seed, offset) is a pure function of
 * (seed, offset + i), so the CPU, a simulated GPU and a CUDA kernel all
 * produce the same numbers. Plain C that nvcc also compiles. */
#ifndef GS_PHILOX_H
#define GS_PHILOX_H
#include <math.h>
#include <stdint.h>

#include "core/gs_hd.h"

typedef struct { uint32_t v[4]; } gs_philox_out;

GS_HD gs_philox_out gs_philox(uint64_t seed, uint64_t counter) {
  uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1; c3 = (uint32_t)p0; c0 = n0; c2 = n2;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  gs_philox_out o = {{c0, c1, c2, c3}};
  return o;
}

/* uniform in [0, 1) with 24 (float) or 53 (double) random bits */
GS_HD float gs_philox_uniform_f32(uint64_t seed, uint64_t i) {
  return (float)(gs_philox(seed, i).v[0] >> 8) * (1.0f / 16777216.0f);
}
GS_HD double gs_philox_uniform_f64(uint64_t seed, uint64_t i) {
  gs_philox_out o = gs_philox(seed, i);
  uint64_t bits = ((uint64_t)o.v[0] << 21) ^ (o.v[1] >> 11);
  return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}
/* standard normal by Box-Muller from the two halves of one counter */
GS_HD double gs_philox_normal(uint64_t seed, uint64_t i) {
  gs_philox_out o = gs_philox(seed, i);
  double u1 = ((double)o.v[0] + 1.0) * (1.0 / 4294967297.0); /* (0, 1) */
  double u2 = (double)o.v[1] * (1.0 / 4294967296.0);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
GS_HD uint64_t gs_philox_u64(uint64_t seed, uint64_t i) {
  gs_philox_out o = gs_philox(seed, i);
  return ((uint64_t)o.v[2] << 32) | o.v[3];
}

/* randint's rule, the same on every backend: element i of a draw in
 * [lo, hi) is lo + u64 mod (hi - lo). The width is taken in uint64,
 * which is exact for every int64 pair lo < hi (at most 2^64 - 1), and
 * never goes through doubles (which round 2^53 + 1 and made the full
 * int64 range a width of 0); the sum wraps modulo 2^64 back into
 * [lo, hi). A width of 0 (lo >= hi, which the op rejects) gives lo, never
 * a division by zero. */
GS_HD uint64_t gs_randint_width(int64_t lo, int64_t hi) { return lo < hi ? (uint64_t)hi - (uint64_t)lo : 0; }
GS_HD int64_t gs_philox_randint(uint64_t seed, uint64_t i, int64_t lo, uint64_t width) {
  uint64_t r = width ? gs_philox_u64(seed, i) % width : 0;
  return (int64_t)((uint64_t)lo + r);
}
#endif
