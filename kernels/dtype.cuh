/* dtype.cuh: device versions of gs_dtype.c's conversions, bit for bit:
 * float16 and bfloat16 from and to float (round to nearest even, the same
 * NaN and overflow handling), float to integer the x86 PyTorch way (NaN
 * and out of range give INT64_MIN), and loads/stores of any dtype through
 * a small tagged value, following gs_dtype_hd.h's per-dtype gs_ld_<d> and
 * gs_st_<d>_f / gs_st_<d>_i (which the CPU copy loops use; these could
 * call them once a GPU run checks that they compile to the same). */
#ifndef GS_DTYPE_CUH
#define GS_DTYPE_CUH

#include "common.cuh"
#include "gs_dtype_hd.h"
#include "gs_elemmath.h"

/* the conversions are shared with the C engine (gs_elemmath.h) */
__device__ __forceinline__ float gs_d_half_to_float(uint16_t h) { return gs_half_bits_to_float(h); }
__device__ __forceinline__ uint16_t gs_d_float_to_half(float f) { return gs_float_to_half_bits(f); }
__device__ __forceinline__ float gs_d_bf16_to_float(uint16_t h) { return gs_bf16_bits_to_float(h); }
__device__ __forceinline__ uint16_t gs_d_float_to_bf16(float f) { return gs_float_to_bf16_bits(f); }
__device__ __forceinline__ int64_t gs_d_f64_to_i64(double v) { return gs_float_to_int64(v); }

/* One element as loaded: floats as double (exact for every float type),
 * integers and bool as int64, as gs_dtype_hd.h's gs_ld_<d> give them. */
struct gs_val { bool is_int; double f; int64_t i; };

__device__ __forceinline__ gs_val gs_d_load(int dt, const char *p) {
  gs_val v = {false, 0.0, 0};
  switch (dt) {
  case GS_FLOAT32: v.f = *(const float *)p; break;
  case GS_FLOAT64: v.f = *(const double *)p; break;
  case GS_FLOAT16: v.f = gs_d_half_to_float(*(const uint16_t *)p); break;
  case GS_BFLOAT16: v.f = gs_d_bf16_to_float(*(const uint16_t *)p); break;
  case GS_INT64: v.is_int = true; v.i = *(const int64_t *)p; break;
  case GS_INT32: v.is_int = true; v.i = *(const int32_t *)p; break;
  case GS_INT16: v.is_int = true; v.i = *(const int16_t *)p; break;
  case GS_INT8: v.is_int = true; v.i = *(const int8_t *)p; break;
  case GS_UINT8: v.is_int = true; v.i = *(const uint8_t *)p; break;
  default: v.is_int = true; v.i = *(const uint8_t *)p != 0; break; /* bool */
  }
  return v;
}

/* Stores v converted to dt the way gs_dtype_hd.h's gs_st_<d>_* do: an integer
 * goes to a float type directly (no detour through double), a float to an
 * integer type through gs_f64_to_i64 then truncation. */
__device__ __forceinline__ void gs_d_store(int dt, char *p, gs_val v) {
  int64_t iv = v.is_int ? v.i : gs_d_f64_to_i64(v.f);
  switch (dt) {
  case GS_FLOAT32: *(float *)p = v.is_int ? (float)v.i : (float)v.f; break;
  case GS_FLOAT64: *(double *)p = v.is_int ? (double)v.i : v.f; break;
  case GS_FLOAT16: *(uint16_t *)p = gs_d_float_to_half(v.is_int ? (float)v.i : (float)v.f); break;
  case GS_BFLOAT16: *(uint16_t *)p = gs_d_float_to_bf16(v.is_int ? (float)v.i : (float)v.f); break;
  case GS_INT64: *(int64_t *)p = iv; break;
  case GS_INT32: *(int32_t *)p = (int32_t)iv; break;
  case GS_INT16: *(int16_t *)p = (int16_t)iv; break;
  case GS_INT8: *(int8_t *)p = (int8_t)iv; break;
  case GS_UINT8: *(uint8_t *)p = (uint8_t)iv; break;
  default: *(uint8_t *)p = v.is_int ? v.i != 0 : v.f != 0; break; /* bool */
  }
}

/* gs_store_f64 / gs_store_i64 (gs_dtype.c), used by arange: the same
 * functions (gs_dtype_hd.h). */
__device__ __forceinline__ void gs_d_store_f64(int dt, char *p, double v) { gs_hd_store_f64(dt, p, v); }
__device__ __forceinline__ void gs_d_store_i64(int dt, char *p, int64_t v) { gs_hd_store_i64(dt, p, v); }

#endif
