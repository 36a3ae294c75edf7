/* cpu_reduce.c: reductions and softmax over a contiguous input viewed as
 * [outer, R, inner] (R the reduced extent). float32 sums accumulate in
 * blocks of float lanes that vectorise, each block added into a double,
 * which keeps both speed and accuracy. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cpu/cpu_reduce.h"
#include "backend/cpu/cpu_iter.h" /* GS_PARALLEL_GRAIN */
#include "backend/cpu/cpu_isa.h" /* a copy of the vector loops per instruction set */
#include "backend/cpu/cpu_math.h"
#include "core/gs_parallel.h"

static void layout(const gs_tensor *x, int dim, int64_t *outer, int64_t *r, int64_t *inner) {
  *outer = 1; *inner = 1; *r = 1;
  if (dim < 0) { *r = gs_numel(x); return; }
  for (int d = 0; d < dim; d++) *outer *= x->shape[d];
  *r = x->shape[dim];
  for (int d = dim + 1; d < x->ndim; d++) *inner *= x->shape[d];
}

/* GCC/Clang vector types: the sums below are written on whole vectors so
 * that the loads run in memory order (see SUM_PREFETCH). aligned(4): the
 * data need only float alignment; may_alias: they read float arrays. */
typedef float v16f __attribute__((vector_size(64), aligned(4), may_alias));
typedef float v8f __attribute__((vector_size(32), aligned(4), may_alias));
typedef double v8d __attribute__((vector_size(64)));

/* How far ahead of the reading position the sums ask for data, in bytes
 * (two prefetches per KiB read). Measured with perf and a C harness on the
 * 2-core EPYC: one thread summing 64 MiB read 21-24 GB/s without it and
 * 35-40 GB/s with it (PyTorch's loop: 34-37 on one thread): the hardware
 * prefetcher alone did not keep enough cache lines in flight, so neither
 * thread streamed at the memory's speed. 32 KiB ahead did best; 2 KiB or
 * a prefetch for every line did worse. Prefetching past the end of the
 * data is harmless (a prefetch never faults), so no bound check. */
#define SUM_PREFETCH 32768
static inline void prefetch_ahead(const void *p, int64_t offset) {
  __builtin_prefetch((const void *)((uintptr_t)p + (uintptr_t)offset));
}

/* The 16 lanes of a 256-float block q (16 rows of 16), each the pairwise
 * sum of its column. (A macro, not a function: a function returning a
 * 64-byte vector has a different ABI with and without AVX.) */
#define TREE16(q)                                                                                  \
  (((((q)[0] + (q)[1]) + ((q)[2] + (q)[3])) + (((q)[4] + (q)[5]) + ((q)[6] + (q)[7]))) +             \
   ((((q)[8] + (q)[9]) + ((q)[10] + (q)[11])) + (((q)[12] + (q)[13]) + ((q)[14] + (q)[15]))))
/* Lanes 0-7 (half 0) or 8-15 (half 1) of a v16f, widened to double. */
#define WIDEN(x, half) __extension__({ v8f h_; memcpy(&h_, (const char *)&(x) + (half) * sizeof h_, sizeof h_); \
                                       __builtin_convertvector(h_, v8d); })

/* Sum of n contiguous floats. 16 float lanes each add 16 elements as a
 * pairwise tree (256 per block), then fold into 16 double lanes, which are
 * added together once at the end. A pairwise tree keeps float rounding at
 * a few ulps of the block's partial sum (and equal values add exactly),
 * and most of the work stays in float, so the loop keeps up with data
 * already in cache. (Sequential float lanes were biased: a million
 * float32 0.1s came out 2 ulps off; blocks of 4096 were 20 ulps off.) */
GS_ISA_INLINE static double sum_f32_impl(const float *p, int64_t n) {
  v8d d0 = {0}, d1 = {0}; /* double lanes 0-7 and 8-15 */
  int64_t i = 0;
  for (; i + 256 <= n; i += 256) {
    prefetch_ahead(p + i, SUM_PREFETCH);
    prefetch_ahead(p + i, SUM_PREFETCH + 512);
    const v16f *q = (const v16f *)(p + i);
    v16f s = TREE16(q);
    d0 += WIDEN(s, 0);
    d1 += WIDEN(s, 1);
  }
  double total = 0;
  for (int j = 0; j < 8; j++) total += d0[j];
  for (int j = 0; j < 8; j++) total += d1[j];
  for (; i < n; i++) total += p[i];
  return total;
}
GS_ISA_FN(double, sum_f32, (const float *p, int64_t n), (p, n))

static double sum_f64(const double *p, int64_t n) {
  double acc[8] = {0}, total = 0;
  int64_t i = 0;
  for (; i + 128 <= n; i += 128) {
    prefetch_ahead(p + i, SUM_PREFETCH);
    prefetch_ahead(p + i, SUM_PREFETCH + 512);
    for (int64_t b = i; b < i + 128; b += 8)
      for (int j = 0; j < 8; j++) acc[j] += p[b + j];
  }
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) acc[j] += p[i + j];
  for (int j = 0; j < 8; j++) total += acc[j];
  for (; i < n; i++) total += p[i];
  return total;
}

typedef struct { const char *p; int64_t n; int nt; bool f32; double parts[64]; } sum_job;

static void sum_chunk(int64_t t, void *arg) {
  sum_job *j = arg;
  int64_t b = j->n * t / j->nt, e = j->n * (t + 1) / j->nt;
  j->parts[t] = j->f32 ? sum_f32((const float *)j->p + b, e - b) : sum_f64((const double *)j->p + b, e - b);
}

/* Whole-tensor float sum split into 16 chunks taken by threads as they
 * come free: a worker that wakes late then costs a fraction of one chunk
 * instead of half the tensor. The partition is fixed and the parts are
 * added in order, so the result is the same for any number of threads. */
static gs_status sum_all(const gs_tensor *x, double *total) {
  int64_t n = gs_numel(x);
  const char *p = gs_tensor_ptr(x);
  bool f32 = x->dtype == GS_FLOAT32;
  if (n < 4 * GS_PARALLEL_GRAIN) {
    *total = f32 ? sum_f32((const float *)p, n) : sum_f64((const double *)p, n);
    return GS_OK;
  }
  sum_job j = {p, n, 16, f32, {0}};
  GS_TRY(gs_parallel_run(j.nt, sum_chunk, &j));
  *total = 0;
  for (int t = 0; t < j.nt; t++) *total += j.parts[t];
  return GS_OK;
}

/* Sums along a dim. Rows (the reduced dim is the last: inner == 1) use
 * the whole-tensor loop on each row. Columns (inner > 1) are summed a tile
 * of up to COL_TILE neighbouring columns at a time, reading each row's
 * stretch of the tile in memory order: 8 rows are added pairwise in float
 * (vectorised across the tile), then into one double per column. The old
 * loop walked one column at a time down the stride, a cache miss per
 * element (0.3-0.8 GB/s on [4096, 4096] along dim 1, PyTorch 8-20). */
#define COL_TILE 1024

GS_ISA_INLINE static void sum_cols_f32_impl(const float *p, int64_t r, int64_t inner, int64_t w, float *out) {
  double acc[COL_TILE];
  for (int64_t k = 0; k < w; k++) acc[k] = 0;
  int64_t i = 0;
  for (; i + 8 <= r; i += 8) {
    const float *q = p + i * inner;
    for (int64_t k = 0; k < w; k++) {
      float a = (q[k] + q[inner + k]) + (q[2 * inner + k] + q[3 * inner + k]);
      float b = (q[4 * inner + k] + q[5 * inner + k]) + (q[6 * inner + k] + q[7 * inner + k]);
      acc[k] += a + b;
    }
  }
  for (; i < r; i++)
    for (int64_t k = 0; k < w; k++) acc[k] += p[i * inner + k];
  for (int64_t k = 0; k < w; k++) out[k] = (float)acc[k];
}
GS_ISA_VOID(sum_cols_f32, (const float *p, int64_t r, int64_t inner, int64_t w, float *out), (p, r, inner, w, out))

GS_ISA_INLINE static void sum_cols_f64_impl(const double *p, int64_t r, int64_t inner, int64_t w, double *out) {
  double acc[COL_TILE];
  for (int64_t k = 0; k < w; k++) acc[k] = 0;
  for (int64_t i = 0; i < r; i++)
    for (int64_t k = 0; k < w; k++) acc[k] += p[i * inner + k];
  for (int64_t k = 0; k < w; k++) out[k] = acc[k];
}
GS_ISA_VOID(sum_cols_f64, (const double *p, int64_t r, int64_t inner, int64_t w, double *out), (p, r, inner, w, out))

/* Tiles of at most COL_TILE columns (inner > 1), narrower (down to 16)
 * when there are too few tiles to give every thread two. */
static void plan_tiles(int64_t outer, int64_t inner, int64_t *tiles, int64_t *width) {
  int64_t want = 2 * gs_num_threads();
  *tiles = (inner + COL_TILE - 1) / COL_TILE;
  if (outer * *tiles < want) {
    int64_t most = (inner + 15) / 16, t = (want + outer - 1) / outer;
    *tiles = t < most ? t : most;
  }
  *width = (inner + *tiles - 1) / *tiles;
  *width = (*width + 15) / 16 * 16;
  if (*width > COL_TILE) *width = COL_TILE;
  *tiles = (inner + *width - 1) / *width;
}

typedef struct { bool f32; int64_t r, inner, tiles, width; const char *base; char *ob; } dim_sum_job;

/* Rows [begin, end) of the [outer, R] layout (inner == 1). */
static void sum_rows(int64_t begin, int64_t end, void *arg) {
  const dim_sum_job *j = arg;
  for (int64_t o = begin; o < end; o++) {
    if (j->f32) ((float *)j->ob)[o] = (float)sum_f32((const float *)j->base + o * j->r, j->r);
    else ((double *)j->ob)[o] = sum_f64((const double *)j->base + o * j->r, j->r);
  }
}

/* Tiles [begin, end) of the [outer, R, inner] layout, `tiles` per outer
 * index, each `width` columns (the last may be narrower). */
static void sum_tiles(int64_t begin, int64_t end, void *arg) {
  const dim_sum_job *j = arg;
  for (int64_t t = begin; t < end; t++) {
    int64_t o = t / j->tiles, k0 = t % j->tiles * j->width, w = j->inner - k0 < j->width ? j->inner - k0 : j->width;
    int64_t in = o * j->r * j->inner + k0, on = o * j->inner + k0;
    if (j->f32) sum_cols_f32((const float *)j->base + in, j->r, j->inner, w, (float *)j->ob + on);
    else sum_cols_f64((const double *)j->base + in, j->r, j->inner, w, (double *)j->ob + on);
  }
}

static gs_status sum_dim(const gs_tensor *x, gs_tensor *out, int64_t outer, int64_t r, int64_t inner) {
  if (outer == 0 || inner == 0) return GS_OK; /* no output */
  dim_sum_job j = {x->dtype == GS_FLOAT32, r, inner, 1, inner, gs_tensor_ptr(x), gs_tensor_ptr(out)};
  if (inner == 1) return gs_parallel_for(outer, outer * r, sum_rows, &j);
  plan_tiles(outer, inner, &j.tiles, &j.width);
  return gs_parallel_for(outer * j.tiles, outer * r * inner, sum_tiles, &j);
}

/* Generic reduction of w neighbouring [R] columns at stride `inner`, each
 * in row order (as one column alone would be), read a row's stretch of up
 * to COL_SUB columns at a time: values in double/int64 and positions.
 * NaN wins max and min, as in PyTorch. (One column at a time missed the
 * cache on every element when inner was large.) */
#define COL_SUB 256
#define REDUCE_COL(T, ACC, NAME, INIT, STEP)                                                    \
  static void NAME(const T *p, int64_t r, int64_t inner, int64_t w, ACC *val, int64_t *pos) {  \
    if (w == 1) { /* one column (a row when inner is 1): in registers */                      \
      ACC acc = INIT; int64_t at = 0;                                                            \
      for (int64_t i = 0; i < r; i++) { T v = p[i * inner]; STEP }                               \
      *val = acc; *pos = at;                                                                     \
      return;                                                                                    \
    }                                                                                            \
    for (int64_t k0 = 0; k0 < w; k0 += COL_SUB) {                                              \
      int64_t n = w - k0 < COL_SUB ? w - k0 : COL_SUB;                                          \
      ACC accs[COL_SUB]; int64_t ats[COL_SUB];                                                   \
      for (int64_t k = 0; k < n; k++) { accs[k] = INIT; ats[k] = 0; }                            \
      for (int64_t i = 0; i < r; i++) {                                                          \
        const T *row = p + i * inner + k0;                                                       \
        for (int64_t k = 0; k < n; k++) {                                                        \
          T v = row[k]; ACC acc = accs[k]; int64_t at = ats[k];                                  \
          STEP                                                                                   \
          accs[k] = acc; ats[k] = at;                                                            \
        }                                                                                        \
      }                                                                                          \
      for (int64_t k = 0; k < n; k++) { val[k0 + k] = accs[k]; pos[k0 + k] = ats[k]; }           \
    }                                                                                            \
  }

#define FLOAT_COLS(T, S)                                                                       \
  REDUCE_COL(T, double, sum_col_##S, 0, acc += v; (void)at;)                                   \
  REDUCE_COL(T, double, prod_col_##S, 1, acc *= v; (void)at;)                                   \
  REDUCE_COL(T, double, max_col_##S, -INFINITY,                                                \
             if (i == 0 || v > acc || (v != v && acc == acc)) { acc = v; at = i; })           \
  REDUCE_COL(T, double, min_col_##S, INFINITY,                                                 \
             if (i == 0 || v < acc || (v != v && acc == acc)) { acc = v; at = i; })
FLOAT_COLS(float, f32)
FLOAT_COLS(double, f64)
REDUCE_COL(int64_t, int64_t, sum_col_i64, 0, acc = (int64_t)((uint64_t)acc + (uint64_t)v); (void)at;)
REDUCE_COL(int64_t, int64_t, prod_col_i64, 1, acc = (int64_t)((uint64_t)acc * (uint64_t)v); (void)at;)
REDUCE_COL(int64_t, int64_t, max_col_i64, INT64_MIN, if (i == 0 || v > acc) { acc = v; at = i; })
REDUCE_COL(int64_t, int64_t, min_col_i64, INT64_MAX, if (i == 0 || v < acc) { acc = v; at = i; })

typedef struct {
  gs_reduce_op op;
  gs_dtype dt;
  int64_t r, inner, tiles, width;
  const char *base;
  char *ob;
  int64_t *ib;
} reduce_job;

/* Reduces tiles [begin, end) of the [outer, R, inner] layout: `tiles` per
 * outer index, each `width` neighbouring columns (the last narrower). */
static void reduce_tiles(int64_t begin, int64_t end, void *arg) {
  const reduce_job *j = arg;
  gs_reduce_op op = j->op;
  int64_t r = j->r, inner = j->inner;
  bool want_index = op == GS_R_ARGMAX || op == GS_R_ARGMIN;
  size_t es = gs_dtype_size(j->dt);
  double dv[COL_TILE];
  int64_t iv[COL_TILE], pos[COL_TILE];
  for (int64_t t = begin; t < end; t++) {
    int64_t o = t / j->tiles, k0 = t % j->tiles * j->width, w = inner - k0 < j->width ? inner - k0 : j->width;
    const char *p = j->base + ((o * r) * inner + k0) * (int64_t)es;
    int64_t c0 = o * inner + k0; /* the first output */
    if (j->dt == GS_INT64) {
      const int64_t *q = (const int64_t *)p;
      switch (op) {
      case GS_R_SUM: sum_col_i64(q, r, inner, w, iv, pos); break;
      case GS_R_PROD: prod_col_i64(q, r, inner, w, iv, pos); break;
      case GS_R_MAX: case GS_R_ARGMAX: max_col_i64(q, r, inner, w, iv, pos); break;
      default: min_col_i64(q, r, inner, w, iv, pos); break;
      }
      for (int64_t k = 0; k < w; k++) ((int64_t *)j->ob)[c0 + k] = want_index ? pos[k] : iv[k];
    } else {
      bool f32 = j->dt == GS_FLOAT32;
      const float *pf = (const float *)p;
      const double *pd = (const double *)p;
      switch (op) {
      case GS_R_SUM: if (f32) sum_col_f32(pf, r, inner, w, dv, pos); else sum_col_f64(pd, r, inner, w, dv, pos); break;
      case GS_R_PROD: if (f32) prod_col_f32(pf, r, inner, w, dv, pos); else prod_col_f64(pd, r, inner, w, dv, pos); break;
      case GS_R_MAX: case GS_R_ARGMAX: if (f32) max_col_f32(pf, r, inner, w, dv, pos); else max_col_f64(pd, r, inner, w, dv, pos); break;
      default: if (f32) min_col_f32(pf, r, inner, w, dv, pos); else min_col_f64(pd, r, inner, w, dv, pos); break;
      }
      for (int64_t k = 0; k < w; k++) {
        if (want_index) ((int64_t *)j->ob)[c0 + k] = pos[k];
        else if (f32) ((float *)j->ob)[c0 + k] = (float)dv[k];
        else ((double *)j->ob)[c0 + k] = dv[k];
      }
    }
    if (j->ib) for (int64_t k = 0; k < w; k++) j->ib[c0 + k] = pos[k];
  }
}

/* Whole-tensor max, min, argmax and argmin: the same answer as the
 * sequential scan below (the first NaN wins; otherwise the extreme value
 * at its first position), found in blocks that vectorise. Each block's
 * extreme comes from 8 lanes (v > m ? v : m is exactly maxps) with a
 * NaN flag per lane; only a block that beats the best so far (or holds a
 * NaN) is scanned again, in cache, for the first position, and the value
 * is read back from there (so -0.0 and 0.0 keep the sequential answer).
 * Chunks run in parallel and combine in order, strictly, so ties keep
 * the first. The sequential scan was one element per step, single
 * threaded: 7 GB/s against the sums' 33 on 16M floats. */
#define EXT_BLOCK 2048
/* Whole vectors of 32 bytes (8 floats, 4 doubles or int64s: AVX2's
 * width; wider vector types got split into scalar compares); a lane
 * takes v where v beats it, through a mask (C has no ?: on vectors). */
typedef int32_t v8i __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));
typedef double v4dl __attribute__((vector_size(32), aligned(8), may_alias));
typedef int64_t v4ll __attribute__((vector_size(32), aligned(8), may_alias));
#define BLOCK_EXTREME(T, VT, VL, MT, W, NAME, BETTER)                                             \
  GS_ISA_INLINE static bool NAME##_impl(const T *p, int64_t n, T *ext) { /* n >= W; true: NaN */ \
    VT m; memcpy(&m, p, sizeof m);                                                                \
    MT nan = {0};                                                                                 \
    int64_t i = 0;                                                                                \
    for (; i + W <= n; i += W) {                                                                  \
      VT v = *(const VL *)(p + i);                                                                \
      MT take = (MT)BETTER(v, m);                                                                 \
      m = (VT)(((MT)v & take) | ((MT)m & ~take));                                                 \
      nan |= (MT)(v != v);                                                                        \
    }                                                                                             \
    T e = m[0]; int any = 0;                                                                      \
    for (int k = 0; k < W; k++) { e = BETTER(m[k], e) ? m[k] : e; any |= nan[k] != 0; }           \
    for (; i < n; i++) { T v = p[i]; e = BETTER(v, e) ? v : e; any |= v != v; }                   \
    *ext = e;                                                                                     \
    return any;                                                                                   \
  }                                                                                               \
  GS_ISA_FN(bool, NAME, (const T *p, int64_t n, T *ext), (p, n, ext))
#define GT(a, b) ((a) > (b))
#define LT(a, b) ((a) < (b))
BLOCK_EXTREME(float, v8f, v8f, v8i, 8, bmax_f32, GT)
BLOCK_EXTREME(float, v8f, v8f, v8i, 8, bmin_f32, LT)
BLOCK_EXTREME(double, v4d, v4dl, v4l, 4, bmax_f64, GT)
BLOCK_EXTREME(double, v4d, v4dl, v4l, 4, bmin_f64, LT)
BLOCK_EXTREME(int64_t, v4l, v4ll, v4l, 4, bmax_i64, GT)
BLOCK_EXTREME(int64_t, v4l, v4ll, v4l, 4, bmin_i64, LT)

typedef struct { double v; int64_t iv, pos; bool nan; } extreme;
typedef struct { const char *p; int64_t n; int nt; gs_dtype dt; bool is_max; extreme parts[64]; } extreme_job;

/* The chunk [b, e) of j's data: its extreme, first position, NaN. */
#define CHUNK_EXTREME(T, BMAX, BMIN)                                                              \
  static extreme chunk_##T(const T *p, int64_t b, int64_t e, bool is_max) {                        \
    extreme r = {.pos = b};                                                                  \
    T best = p[b];                                                                                 \
    for (int64_t i = b; i < e; i += EXT_BLOCK) {                                                   \
      int64_t n = e - i < EXT_BLOCK ? e - i : EXT_BLOCK;                                           \
      T m;                                                                                         \
      bool nan = n >= 8 ? (is_max ? BMAX(p + i, n, &m) : BMIN(p + i, n, &m)) : false;             \
      if (n < 8) { /* a short tail: plainly */                                                   \
        m = p[i];                                                                                  \
        for (int64_t k = 0; k < n; k++) { T v = p[i + k]; nan |= v != v; if (is_max ? v > m : v < m) m = v; } \
      }                                                                                            \
      if (nan) { /* the first NaN wins everything after it */                                      \
        int64_t k = 0;                                                                             \
        while (p[i + k] == p[i + k]) k++;                                                          \
        r.pos = i + k; r.nan = true; best = p[i + k];                                              \
        break;                                                                                     \
      }                                                                                            \
      if (i == b || (is_max ? m > best : m < best)) {                                              \
        int64_t k = 0;                                                                             \
        while (p[i + k] != m) k++;                                                                 \
        r.pos = i + k; best = p[i + k];                                                            \
      }                                                                                            \
    }                                                                                              \
    r.v = (double)best; r.iv = (int64_t)best;                                                      \
    return r;                                                                                      \
  }
CHUNK_EXTREME(float, bmax_f32, bmin_f32)
CHUNK_EXTREME(double, bmax_f64, bmin_f64)
CHUNK_EXTREME(int64_t, bmax_i64, bmin_i64)

static void extreme_chunk(int64_t t, void *arg) {
  extreme_job *j = arg;
  int64_t b = j->n * t / j->nt, e = j->n * (t + 1) / j->nt;
  if (j->dt == GS_FLOAT32) j->parts[t] = chunk_float((const float *)j->p, b, e, j->is_max);
  else if (j->dt == GS_FLOAT64) j->parts[t] = chunk_double((const double *)j->p, b, e, j->is_max);
  else j->parts[t] = chunk_int64_t((const int64_t *)j->p, b, e, j->is_max);
}

static gs_status extreme_all(gs_reduce_op op, gs_tensor *out, const gs_tensor *x) {
  int64_t n = gs_numel(x);
  bool is_max = op == GS_R_MAX || op == GS_R_ARGMAX;
  extreme_job j = {gs_tensor_ptr(x), n, n < 4 * GS_PARALLEL_GRAIN ? 1 : 16, x->dtype, is_max, {{.pos = 0}}};
  if (j.nt == 1) extreme_chunk(0, &j);
  else GS_TRY(gs_parallel_run(j.nt, extreme_chunk, &j));
  extreme r = j.parts[0];
  bool i64 = x->dtype == GS_INT64;
  for (int t = 1; t < j.nt && !r.nan; t++) {
    extreme c = j.parts[t];
    bool better = i64 ? (is_max ? c.iv > r.iv : c.iv < r.iv) : (is_max ? c.v > r.v : c.v < r.v);
    if (c.nan || better) r = c;
  }
  char *o = gs_tensor_ptr(out);
  if (op == GS_R_ARGMAX || op == GS_R_ARGMIN) *(int64_t *)o = r.pos;
  else if (i64) *(int64_t *)o = r.iv;
  else if (x->dtype == GS_FLOAT32) *(float *)o = (float)r.v;
  else *(double *)o = r.v;
  return GS_OK;
}

gs_status gs_cpu_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim) {
  int64_t outer, r, inner;
  layout(x, dim, &outer, &r, &inner);
  /* float sums: the whole tensor (or a 1-d tensor along its dim) in
   * parallel chunks, rows and columns by sum_dim */
  if (op == GS_R_SUM && (dim < 0 || (outer == 1 && inner == 1)) && x->dtype != GS_INT64) {
    double s;
    GS_TRY(sum_all(x, &s));
    if (x->dtype == GS_FLOAT32) *(float *)gs_tensor_ptr(out) = (float)s; else *(double *)gs_tensor_ptr(out) = s;
    return GS_OK;
  }
  if (op == GS_R_SUM && x->dtype != GS_INT64) return sum_dim(x, out, outer, r, inner);
  if (dim < 0 && !idx && r > 0 && op != GS_R_SUM && op != GS_R_PROD &&
      (x->dtype == GS_FLOAT32 || x->dtype == GS_FLOAT64 || x->dtype == GS_INT64))
    return extreme_all(op, out, x);
  if (outer == 0 || inner == 0) return GS_OK; /* no output */
  reduce_job j = {op, x->dtype, r, inner, 1, 1, gs_tensor_ptr(x), gs_tensor_ptr(out),
                  idx ? (int64_t *)gs_tensor_ptr(idx) : NULL};
  if (inner > 1) plan_tiles(outer, inner, &j.tiles, &j.width);
  return gs_parallel_for(outer * j.tiles, outer * inner * r, reduce_tiles, &j);
}

/* Softmax of one row of r elements at stride `inner`, in double for
 * float64 and float (with the vectorisable exp) for float32. A contiguous
 * row (inner 1, the last dim: attention's scores) writes each exp into
 * the output once, in a loop the compiler vectorises, then sums and
 * scales it: the same values as the strided loops, which evaluate the
 * scalar exp twice (a [128, 32, 32] float32 softmax took 2.3 ms that way,
 * ten times an exp of the same tensor). The rows are inlined into
 * softmax_rows, which has a copy per instruction set (cpu_isa.h). */
#define SOFTMAX_ROW(T, NAME, EXP, LOG)                                            \
  static inline __attribute__((always_inline)) void NAME(T *restrict o, const T *restrict x, int64_t r, \
                                                          int64_t inner, bool take_log) {  \
    T mx = -INFINITY;                                                             \
    bool nan = false; /* a NaN makes the row's maximum NaN (branch-free: 2.5x faster) */ \
    for (int64_t i = 0; i < r; i++) { T v = x[i * inner]; mx = v > mx ? v : mx; nan |= v != v; } \
    if (nan) mx = (T)NAN;                                                         \
    if (mx == -INFINITY) mx = 0;                                                  \
    double sum = 0;                                                               \
    if (inner == 1) {                                                             \
      for (int64_t i = 0; i < r; i++) o[i] = EXP(x[i] - mx);                      \
      for (int64_t i = 0; i < r; i++) sum += o[i];                                \
      if (take_log) { T ls = (T)LOG(sum); for (int64_t i = 0; i < r; i++) o[i] = x[i] - mx - ls; } \
      else { T inv = (T)(1.0 / sum); for (int64_t i = 0; i < r; i++) o[i] *= inv; } \
      return;                                                                     \
    }                                                                             \
    for (int64_t i = 0; i < r; i++) sum += EXP(x[i * inner] - mx);                \
    if (take_log) { T ls = (T)LOG(sum); for (int64_t i = 0; i < r; i++) o[i * inner] = x[i * inner] - mx - ls; } \
    else { T inv = (T)(1.0 / sum); for (int64_t i = 0; i < r; i++) o[i * inner] = EXP(x[i * inner] - mx) * inv; } \
  }
SOFTMAX_ROW(float, softmax_row_f32, fast_expf, log)
SOFTMAX_ROW(double, softmax_row_f64, exp, log)

typedef struct { int64_t r, inner; bool f32, log; char *ob; const char *xb; } softmax_job;

GS_ISA_INLINE static void softmax_rows_impl(int64_t begin, int64_t end, void *arg) {
  const softmax_job *j = arg;
  for (int64_t c = begin; c < end; c++) {
    int64_t o = c / j->inner, k = c % j->inner, off = o * j->r * j->inner + k;
    if (j->f32) softmax_row_f32((float *)j->ob + off, (const float *)j->xb + off, j->r, j->inner, j->log);
    else softmax_row_f64((double *)j->ob + off, (const double *)j->xb + off, j->r, j->inner, j->log);
  }
}
GS_ISA_VOID(softmax_rows, (int64_t begin, int64_t end, void *arg), (begin, end, arg))

gs_status gs_cpu_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log) {
  int64_t outer, r, inner;
  layout(x, dim, &outer, &r, &inner);
  softmax_job j = {r, inner, x->dtype == GS_FLOAT32, log, gs_tensor_ptr(out), gs_tensor_ptr(x)};
  return gs_parallel_for(outer * inner, outer * inner * r * 8, softmax_rows, &j);
}
