/* dtype.cuh: loads and stores of any dtype in the kernels, through a small
 * tagged value, by gs_dtype_hd.h's per-dtype accessors (gs_ld_<d>,
 * gs_st_<d>_f, gs_st_<d>_i): the same rules as the CPU copy loops, so a
 * conversion gives the same bits on every device (float16/bfloat16 round
 * to nearest even, float to integer the x86 PyTorch way). Switching these
 * from hand-written copies of the rules to the accessors was checked
 * without a GPU: nvcc's PTX for every kernel file, sm_75/80/90, is the
 * same but for the operand order of one (commutative) `or`. */
#ifndef GS_DTYPE_CUH
#define GS_DTYPE_CUH

#include "backend/cuda/kernels/common.cuh"
#include "core/gs_dtype_hd.h"
#include "core/gs_elemmath.h"

/* One element as loaded: floats as double (exact for every float type),
 * integers and bool as int64, as gs_dtype_hd.h's gs_ld_<d> give them. */
struct gs_val { bool is_int; double f; int64_t i; };

__device__ __forceinline__ gs_val gs_d_load(int dt, const char *p) {
  gs_val v = {false, 0.0, 0};
  switch (dt) {
#define GS_D_LOAD_F(E, d) case E: v.f = gs_ld_##d(p); break;
#define GS_D_LOAD_I(E, d) case E: v.is_int = true; v.i = gs_ld_##d(p); break;
  GS_D_LOAD_F(GS_FLOAT32, f32) GS_D_LOAD_F(GS_FLOAT64, f64) GS_D_LOAD_F(GS_FLOAT16, f16) GS_D_LOAD_F(GS_BFLOAT16, bf16)
  GS_D_LOAD_I(GS_INT64, i64) GS_D_LOAD_I(GS_INT32, i32) GS_D_LOAD_I(GS_INT16, i16) GS_D_LOAD_I(GS_INT8, i8)
  GS_D_LOAD_I(GS_UINT8, u8)
#undef GS_D_LOAD_F
#undef GS_D_LOAD_I
  default: v.is_int = true; v.i = gs_ld_b8(p); break; /* bool */
  }
  return v;
}

/* Stores v converted to dt: gs_st_<d>_i for an integer value (to a float
 * type directly, no detour through double), gs_st_<d>_f for a float one
 * (to an integer type through gs_float_to_int64 then truncation). The
 * integer conversion is made once, before the switch: written so, nvcc
 * gives the same PTX as the hand-written stores this replaced. */
__device__ __forceinline__ void gs_d_store(int dt, char *p, gs_val v) {
  int64_t iv = v.is_int ? v.i : gs_float_to_int64(v.f);
  switch (dt) {
  case GS_FLOAT32: gs_st_f32_f(p, v.is_int ? (float)v.i : (float)v.f); break;
  case GS_FLOAT64: gs_st_f64_f(p, v.is_int ? (double)v.i : v.f); break;
  case GS_FLOAT16: gs_st_f16_f(p, v.is_int ? (float)v.i : (float)v.f); break;
  case GS_BFLOAT16: gs_st_bf16_f(p, v.is_int ? (float)v.i : (float)v.f); break;
#define GS_D_STORE_I(E, d) case E: gs_st_##d##_i(p, iv); break;
  GS_D_STORE_I(GS_INT64, i64) GS_D_STORE_I(GS_INT32, i32) GS_D_STORE_I(GS_INT16, i16) GS_D_STORE_I(GS_INT8, i8)
  GS_D_STORE_I(GS_UINT8, u8)
#undef GS_D_STORE_I
  default: *(uint8_t *)p = v.is_int ? v.i != 0 : v.f != 0; break; /* bool: gs_st_b8_i / gs_st_b8_f */
  }
}

/* gs_store_f64 / gs_store_i64 (gs_dtype.c), used by arange: the same
 * functions (gs_dtype_hd.h). */
__device__ __forceinline__ void gs_d_store_f64(int dt, char *p, double v) { gs_hd_store_f64(dt, p, v); }
__device__ __forceinline__ void gs_d_store_i64(int dt, char *p, int64_t v) { gs_hd_store_i64(dt, p, v); }

#endif
