/* cpu_math.h: a float32 exp written without branches or calls (Cephes'
 * range reduction and polynomial) so loops over it vectorise; libm's expf
 * does not. Shared by the unary and softmax kernels. */
#ifndef CPU_MATH_H
#define CPU_MATH_H
#include <stdint.h>
#include <string.h>

static inline float gs_bits_to_float(int32_t b) {
  union { int32_t i; float f; } u = {b};
  return u.f;
}

/* exp(x) = 2^n * exp(r), x = n ln2 + r, |r| <= ln2/2; about 1.4 ulp.
 * n is rounded with the 1.5*2^23 trick (SSE2 has no vector floor) and
 * 2^n is applied in two halves so results down to subnormals are exact. */
static inline float fast_expf(float x) {
  const float hi = 88.72283905206835f, lo = -103.97207708f;
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  xc = xc == xc ? xc : 0.0f; /* NaN (returned as is below) must not reach (int32_t)n: UB, then a shift of a negative */
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t ni = (int32_t)n, n1 = ni >> 1, n2 = ni - n1;
  float y = p * gs_bits_to_float((n1 + 127) << 23) * gs_bits_to_float((n2 + 127) << 23);
  y = x > hi ? __builtin_inff() : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;
}

#endif
