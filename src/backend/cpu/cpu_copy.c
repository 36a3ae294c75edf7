/* cpu_copy.c: copy with dtype conversion between any of the ten dtypes,
 * fill, arange and index_select. */
#include <string.h>
#include "backend/cpu/cpu_copy.h"
#include "backend/cpu/cpu_iter.h" /* GS_PARALLEL_GRAIN */
#include "core/gs_parallel.h"
#include "core/gs_dtype_hd.h"

/* One loop per (source, destination) pair, with the element rules of
 * gs_dtype_hd.h: the source read at its own precision, then the store for
 * a float or an integer value, picked by the loaded value's C type. */
#define STORE(D, p, v) _Generic((v), float: gs_st_##D##_f, double: gs_st_##D##_f, default: gs_st_##D##_i)(p, v)
#define CONV(S, D)                                                          \
  static void conv_##S##_##D(char **d, const int64_t *s, int64_t n, void *ctx) { \
    char *o = d[0];                                                         \
    const char *q = d[1];                                                   \
    for (int64_t i = 0; i < n; i++, o += s[0], q += s[1]) STORE(D, o, gs_ld_##S(q)); \
  }
#define CONV_ROW(S) CONV(S, f32) CONV(S, f64) CONV(S, f16) CONV(S, bf16) CONV(S, i64) \
  CONV(S, i32) CONV(S, i16) CONV(S, i8) CONV(S, u8) CONV(S, b8)
CONV_ROW(f32) CONV_ROW(f64) CONV_ROW(f16) CONV_ROW(bf16) CONV_ROW(i64)
CONV_ROW(i32) CONV_ROW(i16) CONV_ROW(i8) CONV_ROW(u8) CONV_ROW(b8)

#define ROW(S) {conv_##S##_f32, conv_##S##_f64, conv_##S##_f16, conv_##S##_bf16, conv_##S##_i64, \
  conv_##S##_i32, conv_##S##_i16, conv_##S##_i8, conv_##S##_u8, conv_##S##_b8}
/* indexed [src dtype][dst dtype], in gs_dtype order */
static const gs_loop_fn conv[GS_NDTYPES][GS_NDTYPES] = {
  ROW(f32), ROW(f64), ROW(f16), ROW(bf16), ROW(i64), ROW(i32), ROW(i16), ROW(i8), ROW(u8), ROW(b8)};

/* Same dtype: memcpy runs when contiguous, element moves otherwise. */
#define MOVE(W, T)                                                             \
  static void move_##W(char **d, const int64_t *s, int64_t n, void *ctx) {    \
    if (s[0] == W && s[1] == W) { memcpy(d[0], d[1], (size_t)(n * W)); return; } \
    char *o = d[0]; const char *q = d[1];                                      \
    for (int64_t i = 0; i < n; i++, o += s[0], q += s[1]) *(T *)o = *(const T *)q; \
  }
MOVE(1, uint8_t) MOVE(2, uint16_t) MOVE(4, uint32_t) MOVE(8, uint64_t)

/* ---- copies between different memory orders (a transpose made contiguous) ----
 * Element by element along the destination's rows, such a copy reads the
 * source with a stride of a whole row, and every read misses the cache
 * (a 1024x1024 float transpose: 13 ms). In 8x8 tiles both sides stay in
 * cache (1.7 ms): rows a power of two apart fall in the same cache set,
 * and eight of them still fit its ways (16 or 32: 3 and 4 ms). The tiled
 * dims are the destination's innermost (0) and the one along which the
 * source is contiguous (j); the others are walked around them, one row of
 * tiles along dim 0 per unit of work. */
#define TILE 8

typedef struct {
  int ndim, j;
  int64_t shape[GS_MAX_DIMS];
  int64_t stride[2][GS_MAX_DIMS]; /* elements: [0] dst, [1] src */
  char *base[2];
  size_t w;
  int64_t tile_rows;              /* tiles along dim j */
} tiled;

#define TILE_MOVE(W, T)                                                                         \
  static void tile_##W(char *d, const char *s, int64_t n0, int64_t nj, int64_t d0, int64_t dj, \
                       int64_t s0, int64_t sj) {                                               \
    for (int64_t b = 0; b < n0; b += TILE) {                                                   \
      int64_t e0 = b + TILE < n0 ? b + TILE : n0;                                              \
      for (int64_t y = 0; y < nj; y++)                                                         \
        for (int64_t x = b; x < e0; x++) ((T *)d)[x * d0 + y * dj] = ((const T *)s)[x * s0 + y * sj]; \
    }                                                                                          \
  }
TILE_MOVE(1, uint8_t) TILE_MOVE(2, uint16_t) TILE_MOVE(4, uint32_t) TILE_MOVE(8, uint64_t)

static void tiled_unit(int64_t u, void *arg) {
  const tiled *t = arg;
  int64_t outer = u / t->tile_rows, row = u % t->tile_rows;
  char *d = t->base[0], *s = t->base[1];
  /* the outer dims' coordinates, from the unit's outer index */
  for (int k = 1; k < t->ndim; k++) {
    if (k == t->j) continue;
    int64_t c = outer % t->shape[k];
    outer /= t->shape[k];
    d += c * t->stride[0][k] * (int64_t)t->w;
    s += c * t->stride[1][k] * (int64_t)t->w;
  }
  int64_t y0 = row * TILE, nj = t->shape[t->j] - y0 < TILE ? t->shape[t->j] - y0 : TILE;
  d += y0 * t->stride[0][t->j] * (int64_t)t->w;
  s += y0 * t->stride[1][t->j] * (int64_t)t->w;
  int64_t n0 = t->shape[0], d0 = t->stride[0][0], dj = t->stride[0][t->j], s0 = t->stride[1][0], sj = t->stride[1][t->j];
  switch (t->w) {
    case 1: tile_1(d, s, n0, nj, d0, dj, s0, sj); break;
    case 2: tile_2(d, s, n0, nj, d0, dj, s0, sj); break;
    case 4: tile_4(d, s, n0, nj, d0, dj, s0, sj); break;
    default: tile_8(d, s, n0, nj, d0, dj, s0, sj); break;
  }
}

/* Runs the tiled copy when the layouts call for it; *done says whether. */
static gs_status tiled_copy(gs_tensor *dst, const gs_tensor *src, bool *done) {
  *done = false;
  tiled t;
  const gs_tensor *ops[2] = {dst, src};
  t.ndim = gs_merge_dims(2, ops, t.shape, t.stride);
  if (t.ndim < 2 || t.stride[0][0] != 1 || t.stride[1][0] == 1 || t.shape[0] < TILE) return GS_OK;
  t.j = 0;
  for (int k = 1; k < t.ndim; k++)
    if (t.stride[1][k] == 1 && t.shape[k] >= TILE) { t.j = k; break; }
  if (!t.j) return GS_OK;
  t.base[0] = gs_tensor_ptr(dst);
  t.base[1] = gs_tensor_ptr(src);
  t.w = gs_dtype_size(dst->dtype);
  t.tile_rows = (t.shape[t.j] + TILE - 1) / TILE;
  int64_t units = t.tile_rows;
  for (int k = 1; k < t.ndim; k++)
    if (k != t.j) units *= t.shape[k];
  *done = true;
  int64_t per_unit = t.shape[0] * TILE, total = units * per_unit;
  if (total < GS_PARALLEL_GRAIN) {
    for (int64_t u = 0; u < units; u++) tiled_unit(u, &t);
    return GS_OK;
  }
  return gs_parallel_run(units, tiled_unit, &t);
}

gs_status gs_cpu_copy(gs_tensor *dst, const gs_tensor *src) {
  const gs_tensor *ops[2] = {dst, src};
  gs_loop_fn fn;
  if (dst->dtype == src->dtype || (dst->dtype == GS_UINT8 && src->dtype == GS_BOOL)) {
    bool done;
    GS_TRY(tiled_copy(dst, src, &done));
    if (done) return GS_OK;
    size_t w = gs_dtype_size(dst->dtype);
    fn = w == 1 ? move_1 : w == 2 ? move_2 : w == 4 ? move_4 : move_8;
  } else {
    fn = conv[src->dtype][dst->dtype];
  }
  return gs_cpu_foreach(2, ops, fn, NULL, false);
}

#define FILL(W, T)                                                             \
  static void fill_##W(char **d, const int64_t *s, int64_t n, void *ctx) {    \
    T v = *(const T *)ctx;                                                     \
    if (s[0] == W) { T *o = (T *)d[0]; for (int64_t i = 0; i < n; i++) o[i] = v; return; } \
    char *o = d[0];                                                            \
    for (int64_t i = 0; i < n; i++, o += s[0]) *(T *)o = v;                    \
  }
FILL(1, uint8_t) FILL(2, uint16_t) FILL(4, uint32_t) FILL(8, uint64_t)

gs_status gs_cpu_fill(gs_tensor *dst, gs_scalar value) {
  uint64_t bits = 0;
  if (value.is_float) gs_store_f64(dst->dtype, &bits, value.f);
  else gs_store_i64(dst->dtype, &bits, value.i);
  size_t w = gs_dtype_size(dst->dtype);
  gs_loop_fn fn = w == 1 ? fill_1 : w == 2 ? fill_2 : w == 4 ? fill_4 : fill_8;
  const gs_tensor *ops[1] = {dst};
  return gs_cpu_foreach(1, ops, fn, &bits, false);
}

gs_status gs_cpu_arange(gs_tensor *dst, double start, double step) {
  int64_t n = gs_numel(dst);
  char *p = gs_tensor_ptr(dst);
  size_t w = gs_dtype_size(dst->dtype);
  bool is_int = !gs_dtype_is_float(dst->dtype);
  int64_t istart = (int64_t)start, istep = (int64_t)step;
  bool exact_int = is_int && (double)istart == start && (double)istep == step;
  for (int64_t i = 0; i < n; i++) {
    if (exact_int) gs_store_i64(dst->dtype, p + i * w, istart + istep * i);
    else gs_store_f64(dst->dtype, p + i * w, start + step * (double)i);
  }
  return GS_OK;
}

/* The first element of idx (int64, 1-d, any stride) outside [0, size) is
 * reported at once (flag NULL) or recorded in flag; true when all fit. */
static gs_status check_index(const gs_tensor *idx, int64_t size, int code, int dim, gs_devflag *flag, bool *ok) {
  const int64_t *ix = (const int64_t *)gs_tensor_ptr(idx);
  int64_t n = gs_numel(idx), istride = idx->ndim ? idx->stride[0] : 0;
  *ok = true;
  for (int64_t j = 0; j < n; j++) {
    int64_t k = ix[j * istride];
    if (k >= 0 && k < size) continue;
    *ok = false;
    gs_devflag f = {.code = code, .dim = dim, .value = k, .limit = size};
    if (flag) {
      gs_devflag_raise(flag, code, dim, k, size);
      return GS_OK;
    }
    char what[256];
    gs_devflag_describe(&f, what, sizeof what);
    return gs_error("%s", what);
  }
  return GS_OK;
}

gs_status gs_cpu_check_index_flagged(const gs_tensor *idx, int64_t size, int code, gs_devflag *flag) {
  bool ok;
  return check_index(idx, size, code, 0, flag, &ok);
}

gs_status gs_cpu_check_index(const gs_tensor *idx, int64_t size, int code) {
  return gs_cpu_check_index_flagged(idx, size, code, NULL);
}

gs_status gs_cpu_index_select_flagged(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx,
                                      gs_devflag *flag) {
  /* x and out contiguous: [outer, size, inner] -> [outer, nidx, inner] */
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; d++) outer *= x->shape[d];
  for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
  int64_t size = x->shape[dim], nidx = gs_numel(idx);
  size_t row = (size_t)inner * gs_dtype_size(x->dtype);
  const int64_t *ix = (const int64_t *)gs_tensor_ptr(idx);
  int64_t istride = idx->ndim ? idx->stride[0] : 0;
  const char *src = gs_tensor_ptr(x);
  char *dst = gs_tensor_ptr(out);
  bool ok;
  GS_TRY(check_index(idx, size, GS_FLAG_INDEX_SELECT, dim, flag, &ok));
  if (!ok) { /* recorded for later: the output is zeros, as a GPU's gather leaves it */
    /* an empty output may have no buffer at all: memset(NULL, 0, 0) is
     * undefined (API fuzzer seed 99991 case 20870, UBSan) */
    if (outer * nidx != 0 && row != 0) memset(dst, 0, (size_t)(outer * nidx) * row);
    return GS_OK;
  }
  if (row == 0) return GS_OK; /* nothing to copy (an empty x may have no buffer) */
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < nidx; j++)
      memcpy(dst + (o * nidx + j) * row, src + (o * size + ix[j * istride]) * row, row);
  return GS_OK;
}

gs_status gs_cpu_index_select(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx) {
  return gs_cpu_index_select_flagged(out, x, dim, idx, NULL);
}
