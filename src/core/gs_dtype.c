/* gs_dtype.c: dtype facts, PyTorch's promotion lattice, half/bfloat16
 * conversions and generic element load/store. */
#include <math.h>
#include <string.h>
#include "core/gs_dtype.h"
#include "core/gs_dtype_hd.h"
#include "core/gs_elemmath.h"

static const struct { const char *name; size_t size; } info[GS_NDTYPES] = {
  [GS_FLOAT32] = {"float32", 4}, [GS_FLOAT64] = {"float64", 8},
  [GS_FLOAT16] = {"float16", 2}, [GS_BFLOAT16] = {"bfloat16", 2},
  [GS_INT64] = {"int64", 8}, [GS_INT32] = {"int32", 4}, [GS_INT16] = {"int16", 2},
  [GS_INT8] = {"int8", 1}, [GS_UINT8] = {"uint8", 1}, [GS_BOOL] = {"bool", 1},
};

size_t gs_dtype_size(gs_dtype t) { return info[t].size; }
const char *gs_dtype_name(gs_dtype t) { return info[t].name; }

bool gs_dtype_from_name(const char *name, gs_dtype *out) {
  static const struct { const char *alias; gs_dtype t; } aliases[] = {
    {"float", GS_FLOAT32}, {"double", GS_FLOAT64}, {"half", GS_FLOAT16},
    {"long", GS_INT64}, {"int", GS_INT32}, {"short", GS_INT16},
  };
  if (strncmp(name, "torch.", 6) == 0) name += 6;
  for (int i = 0; i < GS_NDTYPES; i++)
    if (strcmp(name, info[i].name) == 0) { *out = (gs_dtype)i; return true; }
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].alias) == 0) { *out = aliases[i].t; return true; }
  return false;
}

bool gs_dtype_is_float(gs_dtype t) { return t <= GS_BFLOAT16; }

gs_dtype gs_compute_dtype(gs_dtype t) {
  switch (t) {
  case GS_FLOAT16: case GS_BFLOAT16: return GS_FLOAT32;
  case GS_INT32: case GS_INT16: case GS_INT8: case GS_UINT8: case GS_BOOL: return GS_INT64;
  default: return t;
  }
}

/* torch.promote_types. Within a category the wider type wins; uint8 with a
 * signed integer needs int16; float16 with bfloat16 needs float32. */
gs_dtype gs_promote(gs_dtype a, gs_dtype b) {
  if (a == b) return a;
  if (a == GS_BOOL) return b;
  if (b == GS_BOOL) return a;
  bool fa = gs_dtype_is_float(a), fb = gs_dtype_is_float(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa) { /* both floating */
    if (a == GS_FLOAT64 || b == GS_FLOAT64) return GS_FLOAT64;
    return GS_FLOAT32; /* f32 with anything, or f16 with bf16 */
  }
  /* both integral: rank by width; uint8 mixes with signed as int16 */
  static const int rank[GS_NDTYPES] = {[GS_UINT8] = 1, [GS_INT8] = 1, [GS_INT16] = 2,
                                       [GS_INT32] = 3, [GS_INT64] = 4};
  if ((a == GS_UINT8 && b == GS_INT8) || (a == GS_INT8 && b == GS_UINT8)) return GS_INT16;
  return rank[a] >= rank[b] ? a : b;
}

/* The conversions themselves live in gs_elemmath.h, shared with CUDA. */
float gs_half_to_float(uint16_t h) { return gs_half_bits_to_float(h); }
uint16_t gs_float_to_half(float f) { return gs_float_to_half_bits(f); }
float gs_bf16_to_float(uint16_t h) { return gs_bf16_bits_to_float(h); }
uint16_t gs_float_to_bf16(float f) { return gs_float_to_bf16_bits(f); }
int64_t gs_f64_to_i64(double v) { return gs_float_to_int64(v); }

/* The element rules are shared with the CUDA kernels (gs_dtype_hd.h). */
double gs_load_f64(gs_dtype t, const void *p) { return gs_hd_load_f64(t, p); }
int64_t gs_load_i64(gs_dtype t, const void *p) { return gs_hd_load_i64(t, p); }
void gs_store_f64(gs_dtype t, void *p, double v) { gs_hd_store_f64(t, p, v); }
void gs_store_i64(gs_dtype t, void *p, int64_t v) { gs_hd_store_i64(t, p, v); }
