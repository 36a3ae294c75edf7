/* cpu_math.h: a float32 exp written without branches or calls (Cephes'
 * range reduction and polynomial) so loops over it vectorise; libm's expf
 * does not. Shared by the unary and softmax kernels. */
#ifndef CPU_MATH_H
#define CPU_MATH_H
#include <stdint.h>
#include <string.h>

/* exp(x) = 2^n * exp(r), x = n ln2 + r, |r| <= ln2/2; error about 1 ulp. */
static inline float fast_expf(float x) {
  const float hi = 88.72283905206835f, lo = -103.97207708f;
  float xc = x > hi ? hi : x < lo ? lo : x;
  float n = __builtin_floorf(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  /* 2^n in two halves so n down to -150 (subnormal results) stays exact */
  int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;
  int32_t b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  float s1, s2;
  memcpy(&s1, &b1, 4);
  memcpy(&s2, &b2, 4);
  float y = p * s1 * s2;
  y = x > hi ? __builtin_inff() : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;
}

#endif
