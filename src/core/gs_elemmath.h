/* gs_elemmath.h: the scalar rules every backend must apply identically:
 * float16/bfloat16 bit conversions (round to nearest even, NaN kept
 * quiet, overflow to inf, gradual underflow), float to int64 the way x86
 * PyTorch does it (NaN and out of range give INT64_MIN, never C's
 * undefined behaviour), and PyTorch's integer and float floor division,
 * remainder (sign of the divisor) and integer power. Compiled by the C
 * engine and by nvcc (gs_hd.h). */
#ifndef GS_ELEMMATH_H
#define GS_ELEMMATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "core/gs_hd.h"

GS_HD float gs_bits_f32(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
GS_HD uint32_t gs_f32_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

GS_HD float gs_half_bits_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) bits = sign;
    else { /* subnormal: renormalise */
      int e = -1;
      do { e++; man <<= 1; } while (!(man & 0x400));
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);
  else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  return gs_bits_f32(bits);
}

GS_HD uint16_t gs_float_to_half_bits(float f) {
  uint32_t x = gs_f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds past 65504 */
  if (absx < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
    if (absx < 0x33000000u) return (uint16_t)sign;
    uint32_t man = (absx & 0x7fffff) | 0x800000;
    int shift = 126 - (int)(absx >> 23); /* 14 .. 24 */
    uint32_t half_man = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half_man & 1))) half_man++;
    return (uint16_t)(sign | half_man);
  }
  uint32_t h = ((absx >> 13) - ((127 - 15) << 10));
  uint32_t rem = absx & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

GS_HD float gs_bf16_bits_to_float(uint16_t h) { return gs_bits_f32((uint32_t)h << 16); }

GS_HD uint16_t gs_float_to_bf16_bits(float f) {
  uint32_t x = gs_f32_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

GS_HD int64_t gs_float_to_int64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
  return (int64_t)v;
}

/* Integer floor division and remainder; *zero_div is set for b == 0 (the
 * caller reports ZeroDivisionError). b == -1 avoids INT64_MIN / -1. */
GS_HD int64_t gs_int_floordiv(int64_t a, int64_t b, int *zero_div) {
  if (b == 0) { *zero_div = 1; return 0; }
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

GS_HD int64_t gs_int_remainder(int64_t a, int64_t b, int *zero_div) {
  if (b == 0) { *zero_div = 1; return 0; }
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

/* a^b wrapping like PyTorch; negative b gives 1, +-1 or 0 */
GS_HD int64_t gs_int_pow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, base = (uint64_t)a;
  while (b) { if (b & 1) r *= base; base *= base; b >>= 1; }
  return (int64_t)r;
}

GS_HD double gs_float_floordiv(double a, double b) {
  if (b == 0) return a / b;
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign(0.0, a / b);
  double fl = floor(div);
  return div - fl > 0.5 ? fl + 1.0 : fl;
}

GS_HD double gs_float_remainder(double a, double b) {
  double r = fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

#endif
