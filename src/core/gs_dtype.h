/* gs_dtype.h: element types, their sizes and names, PyTorch's type
 * promotion, and the float16/bfloat16 bit conversions. */
#ifndef GS_DTYPE_H
#define GS_DTYPE_H

#include "core/gs_common.h"

typedef enum {
  GS_FLOAT32, GS_FLOAT64, GS_FLOAT16, GS_BFLOAT16,
  GS_INT64, GS_INT32, GS_INT16, GS_INT8, GS_UINT8, GS_BOOL,
  GS_NDTYPES
} gs_dtype;

size_t gs_dtype_size(gs_dtype t);
const char *gs_dtype_name(gs_dtype t);          /* "float32" */
bool gs_dtype_from_name(const char *name, gs_dtype *out); /* accepts aliases */
bool gs_dtype_is_float(gs_dtype t);
gs_dtype gs_promote(gs_dtype a, gs_dtype b);    /* torch.promote_types */

/* The dtype kernels compute in: float16/bfloat16 go through float32,
 * every integer type and bool through int64. Arithmetic kernels exist
 * only for float32, float64 and int64. */
gs_dtype gs_compute_dtype(gs_dtype t);

float gs_half_to_float(uint16_t h);
uint16_t gs_float_to_half(float f);
float gs_bf16_to_float(uint16_t h);
uint16_t gs_float_to_bf16(float f);

/* Read/write one element of any dtype as double or int64 (slow; for
 * printing, item(), tolist(), table construction). */
double gs_load_f64(gs_dtype t, const void *p);
int64_t gs_load_i64(gs_dtype t, const void *p);
void gs_store_f64(gs_dtype t, void *p, double v);
void gs_store_i64(gs_dtype t, void *p, int64_t v);

/* Float to integer the way x86 PyTorch does it, without C's undefined
 * behaviour: NaN and out-of-range values become INT64_MIN. */
int64_t gs_f64_to_i64(double v);

#endif
