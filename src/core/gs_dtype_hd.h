/* gs_dtype_hd.h: the one copy of how an element of each dtype is read and
 * written: per dtype (gs_ld_<d>, gs_st_<d>_f, gs_st_<d>_i: the CPU copy
 * loops) and for any dtype as a double or an int64 (gs_hd_load_f64 and
 * friends: gs_dtype.c's gs_load_f64..., the CUDA kernels through
 * backend/cuda/kernels/dtype.cuh). Compiled by the C engine and by nvcc, so both sides
 * apply one rule: float16/bfloat16 through gs_elemmath.h's conversions,
 * float to integer the x86 PyTorch way (gs_float_to_int64), bool as 0/1. */
#ifndef GS_DTYPE_HD_H
#define GS_DTYPE_HD_H
#include <stdint.h>
#include "core/gs_dtype.h"
#include "core/gs_elemmath.h"
#include "core/gs_hd.h"

/* ---- one dtype at a time, by its C type: the rules themselves ----
 * gs_ld_<d>(p): the element at p at its own precision: float for float32,
 * float16 and bfloat16, double for float64, int64 for the integers, and
 * 0 or 1 for bool (any nonzero byte is true).
 * gs_st_<d>_f(p, v): a float value into d: float types round once from
 * double (float16/bfloat16 through float, as PyTorch's Half(float)),
 * integer types through gs_float_to_int64 then truncation, bool v != 0.
 * gs_st_<d>_i(p, v): an integer value into d: integer types truncate,
 * float types round once from int64 (C's conversion, as PyTorch's
 * static_cast; no detour through double, which would round twice), bool
 * v != 0.
 * The generic forms below switch over these; the CPU copy loops
 * (cpu_copy.c) call them directly, one loop per pair of dtypes. */
#define GS_HD_FLOAT_ACCESS(d, T, LD, ST)                                            \
  GS_HD T gs_ld_##d(const void *p) { return LD; }                                  \
  GS_HD void gs_st_##d##_f(void *p, double v) { ST(v); }                            \
  GS_HD void gs_st_##d##_i(void *p, int64_t v) { ST(v); }
#define GS_HD_ST_F32(v) (*(float *)p = (float)(v))
#define GS_HD_ST_F64(v) (*(double *)p = (double)(v))
#define GS_HD_ST_F16(v) (*(uint16_t *)p = gs_float_to_half_bits((float)(v)))
#define GS_HD_ST_BF16(v) (*(uint16_t *)p = gs_float_to_bf16_bits((float)(v)))
GS_HD_FLOAT_ACCESS(f32, float, *(const float *)p, GS_HD_ST_F32)
GS_HD_FLOAT_ACCESS(f64, double, *(const double *)p, GS_HD_ST_F64)
GS_HD_FLOAT_ACCESS(f16, float, gs_half_bits_to_float(*(const uint16_t *)p), GS_HD_ST_F16)
GS_HD_FLOAT_ACCESS(bf16, float, gs_bf16_bits_to_float(*(const uint16_t *)p), GS_HD_ST_BF16)
#undef GS_HD_ST_F32
#undef GS_HD_ST_F64
#undef GS_HD_ST_F16
#undef GS_HD_ST_BF16
#undef GS_HD_FLOAT_ACCESS

#define GS_HD_INT_ACCESS(d, T)                                                     \
  GS_HD int64_t gs_ld_##d(const void *p) { return *(const T *)p; }                 \
  GS_HD void gs_st_##d##_i(void *p, int64_t v) { *(T *)p = (T)v; }                 \
  GS_HD void gs_st_##d##_f(void *p, double v) { *(T *)p = (T)gs_float_to_int64(v); }
GS_HD_INT_ACCESS(i64, int64_t)
GS_HD_INT_ACCESS(i32, int32_t)
GS_HD_INT_ACCESS(i16, int16_t)
GS_HD_INT_ACCESS(i8, int8_t)
GS_HD_INT_ACCESS(u8, uint8_t)
#undef GS_HD_INT_ACCESS

GS_HD int64_t gs_ld_b8(const void *p) { return *(const uint8_t *)p != 0; }
GS_HD void gs_st_b8_i(void *p, int64_t v) { *(uint8_t *)p = v != 0; }
GS_HD void gs_st_b8_f(void *p, double v) { *(uint8_t *)p = v != 0; }

/* ---- any dtype, chosen at run time: a switch over the accessors ---- */
#define GS_HD_DTYPES(X) X(GS_FLOAT32, f32) X(GS_FLOAT64, f64) X(GS_FLOAT16, f16) X(GS_BFLOAT16, bf16) \
  X(GS_INT64, i64) X(GS_INT32, i32) X(GS_INT16, i16) X(GS_INT8, i8) X(GS_UINT8, u8) X(GS_BOOL, b8)

GS_HD double gs_hd_load_f64(int t, const void *p) {
  switch (t) {
#define GS_HD_CASE(E, d) case E: return (double)gs_ld_##d(p);
  GS_HD_DTYPES(GS_HD_CASE)
#undef GS_HD_CASE
  default: return 0;
  }
}

/* integers exactly; floats through gs_float_to_int64 */
GS_HD int64_t gs_hd_load_i64(int t, const void *p) {
  switch (t) {
  case GS_INT64: return gs_ld_i64(p);
  case GS_INT32: return gs_ld_i32(p);
  case GS_INT16: return gs_ld_i16(p);
  case GS_INT8: return gs_ld_i8(p);
  case GS_UINT8: return gs_ld_u8(p);
  case GS_BOOL: return gs_ld_b8(p);
  default: return gs_float_to_int64(gs_hd_load_f64(t, p));
  }
}

GS_HD void gs_hd_store_i64(int t, void *p, int64_t v) {
  switch (t) {
#define GS_HD_CASE(E, d) case E: gs_st_##d##_i(p, v); break;
  GS_HD_DTYPES(GS_HD_CASE)
#undef GS_HD_CASE
  default: break;
  }
}

GS_HD void gs_hd_store_f64(int t, void *p, double v) {
  switch (t) {
#define GS_HD_CASE(E, d) case E: gs_st_##d##_f(p, v); break;
  GS_HD_DTYPES(GS_HD_CASE)
#undef GS_HD_CASE
  default: break;
  }
}

#endif
