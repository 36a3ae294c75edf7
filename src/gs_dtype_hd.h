/* gs_dtype_hd.h: one element of any dtype read or written as a double or
 * an int64, compiled by the C engine (gs_dtype.c's gs_load_f64 and
 * friends) and by nvcc (kernels/dtype.cuh), so both sides apply one rule:
 * float16/bfloat16 through gs_elemmath.h's conversions, float to integer
 * the x86 PyTorch way (gs_float_to_int64), bool as 0/1. */
#ifndef GS_DTYPE_HD_H
#define GS_DTYPE_HD_H
#include <stdint.h>
#include "gs_dtype.h"
#include "gs_elemmath.h"
#include "gs_hd.h"

GS_HD double gs_hd_load_f64(int t, const void *p) {
  switch (t) {
  case GS_FLOAT32: return *(const float *)p;
  case GS_FLOAT64: return *(const double *)p;
  case GS_FLOAT16: return gs_half_bits_to_float(*(const uint16_t *)p);
  case GS_BFLOAT16: return gs_bf16_bits_to_float(*(const uint16_t *)p);
  case GS_INT64: return (double)*(const int64_t *)p;
  case GS_INT32: return *(const int32_t *)p;
  case GS_INT16: return *(const int16_t *)p;
  case GS_INT8: return *(const int8_t *)p;
  case GS_UINT8: return *(const uint8_t *)p;
  case GS_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
  default: return 0;
  }
}

GS_HD int64_t gs_hd_load_i64(int t, const void *p) {
  switch (t) {
  case GS_INT64: return *(const int64_t *)p;
  case GS_INT32: return *(const int32_t *)p;
  case GS_INT16: return *(const int16_t *)p;
  case GS_INT8: return *(const int8_t *)p;
  case GS_UINT8: return *(const uint8_t *)p;
  case GS_BOOL: return *(const uint8_t *)p ? 1 : 0;
  default: return gs_float_to_int64(gs_hd_load_f64(t, p));
  }
}

/* An integer value into an integer dtype (truncating); a float dtype
 * gets it through double, as gs_hd_store_f64 would. */
GS_HD void gs_hd_store_i64(int t, void *p, int64_t v) {
  double d = (double)v;
  switch (t) {
  case GS_INT64: *(int64_t *)p = v; break;
  case GS_INT32: *(int32_t *)p = (int32_t)v; break;
  case GS_INT16: *(int16_t *)p = (int16_t)v; break;
  case GS_INT8: *(int8_t *)p = (int8_t)v; break;
  case GS_UINT8: *(uint8_t *)p = (uint8_t)v; break;
  case GS_BOOL: *(uint8_t *)p = v != 0; break;
  case GS_FLOAT32: *(float *)p = (float)d; break;
  case GS_FLOAT64: *(double *)p = d; break;
  case GS_FLOAT16: *(uint16_t *)p = gs_float_to_half_bits((float)d); break;
  default: *(uint16_t *)p = gs_float_to_bf16_bits((float)d); break; /* bfloat16 */
  }
}

/* A float value into a float dtype, or into an integer dtype through
 * gs_float_to_int64 then truncation; bool is v != 0. */
GS_HD void gs_hd_store_f64(int t, void *p, double v) {
  switch (t) {
  case GS_FLOAT32: *(float *)p = (float)v; break;
  case GS_FLOAT64: *(double *)p = v; break;
  case GS_FLOAT16: *(uint16_t *)p = gs_float_to_half_bits((float)v); break;
  case GS_BFLOAT16: *(uint16_t *)p = gs_float_to_bf16_bits((float)v); break;
  case GS_BOOL: *(uint8_t *)p = v != 0; break;
  default: gs_hd_store_i64(t, p, gs_float_to_int64(v)); break;
  }
}

#endif
