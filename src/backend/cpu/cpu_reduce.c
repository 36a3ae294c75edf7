/* cpu_reduce.c: reductions and softmax over a contiguous input viewed as
 * [outer, R, inner] (R the reduced extent). float32 sums accumulate in
 * blocks of float lanes that vectorise, each block added into a double,
 * which keeps both speed and accuracy. */
#include <math.h>
#include <stdlib.h>
#include "backend/cpu/cpu_reduce.h"
#include "backend/cpu/backend_cpu.h"
#include "backend/cpu/cpu_math.h"
#include "core/gs_parallel.h"

static void layout(const gs_tensor *x, int dim, int64_t *outer, int64_t *r, int64_t *inner) {
  *outer = 1; *inner = 1; *r = 1;
  if (dim < 0) { *r = gs_numel(x); return; }
  for (int d = 0; d < dim; d++) *outer *= x->shape[d];
  *r = x->shape[dim];
  for (int d = dim + 1; d < x->ndim; d++) *inner *= x->shape[d];
}

/* Sum of n contiguous floats: 16 float lanes per block of 256, blocks in
 * double. Each float lane adds only 16 values, so its rounding error stays
 * at a few ulps of a small partial sum; with blocks of 4096 (256 values per
 * lane) a sum of 10^6 copies of 0.1 was off by 2.4e-6 relative (~20 ulps;
 * PyTorch's cascade sum is within 1). The double adds cost about 6%. */
/* 16 float lanes each add 16 elements as a pairwise tree (256 per block),
 * then fold into 16 double lanes, which are added together once at the
 * end. A pairwise tree keeps float rounding at a few ulps of the block's
 * partial sum (and equal values add exactly), and most of the work stays
 * in float, so the loop keeps up with data already in cache. (Sequential
 * float lanes were biased: a million float32 0.1s came out 2 ulps off.) */
GS_VECTOR_CLONES static double sum_f32(const float *p, int64_t n) {
  double dacc[16] = {0};
  int64_t i = 0;
  for (; i + 256 <= n; i += 256) {
    const float *q = p + i;
    float acc[16];
    for (int j = 0; j < 16; j++) {
      float a = (q[j] + q[16 + j]) + (q[32 + j] + q[48 + j]);
      float b = (q[64 + j] + q[80 + j]) + (q[96 + j] + q[112 + j]);
      float c = (q[128 + j] + q[144 + j]) + (q[160 + j] + q[176 + j]);
      float d = (q[192 + j] + q[208 + j]) + (q[224 + j] + q[240 + j]);
      acc[j] = (a + b) + (c + d);
    }
    for (int j = 0; j < 16; j++) dacc[j] += acc[j];
  }
  double total = 0;
  for (int j = 0; j < 16; j++) total += dacc[j];
  for (; i < n; i++) total += p[i];
  return total;
}

static double sum_f64(const double *p, int64_t n) {
  double acc[8] = {0}, total = 0;
  int64_t i = 0;
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

/* Generic reduction of one [R] column at stride `inner`; returns value in
 * double/int64 and position. NaN wins max and min, as in PyTorch. */
#define REDUCE_COL(T, ACC, NAME, INIT, STEP)                                          \
  static void NAME(const T *p, int64_t r, int64_t inner, ACC *val, int64_t *pos) {   \
    ACC acc = INIT; int64_t at = 0;                                                  \
    for (int64_t i = 0; i < r; i++) { T v = p[i * inner]; STEP }                     \
    *val = acc; *pos = at;                                                           \
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
  int64_t r, inner;
  const char *base;
  char *ob;
  int64_t *ib;
} reduce_job;

/* Reduces columns [begin, end) of the [outer, R, inner] layout. */
static void reduce_cols(int64_t begin, int64_t end, void *arg) {
  const reduce_job *j = arg;
  gs_reduce_op op = j->op;
  int64_t r = j->r, inner = j->inner;
  bool want_index = op == GS_R_ARGMAX || op == GS_R_ARGMIN;
  size_t es = gs_dtype_size(j->dt);
  for (int64_t c = begin; c < end; c++) {
    int64_t o = c / inner, k = c % inner, pos = 0;
    const char *p = j->base + ((o * r) * inner + k) * (int64_t)es;
    if (j->dt == GS_INT64) {
      int64_t v = 0;
      const int64_t *q = (const int64_t *)p;
      switch (op) {
      case GS_R_SUM: sum_col_i64(q, r, inner, &v, &pos); break;
      case GS_R_PROD: prod_col_i64(q, r, inner, &v, &pos); break;
      case GS_R_MAX: case GS_R_ARGMAX: max_col_i64(q, r, inner, &v, &pos); break;
      default: min_col_i64(q, r, inner, &v, &pos); break;
      }
      ((int64_t *)j->ob)[c] = want_index ? pos : v;
    } else {
      double v = 0;
      bool f32 = j->dt == GS_FLOAT32;
      const float *pf = (const float *)p;
      const double *pd = (const double *)p;
      switch (op) {
      case GS_R_SUM: if (f32) sum_col_f32(pf, r, inner, &v, &pos); else sum_col_f64(pd, r, inner, &v, &pos); break;
      case GS_R_PROD: if (f32) prod_col_f32(pf, r, inner, &v, &pos); else prod_col_f64(pd, r, inner, &v, &pos); break;
      case GS_R_MAX: case GS_R_ARGMAX: if (f32) max_col_f32(pf, r, inner, &v, &pos); else max_col_f64(pd, r, inner, &v, &pos); break;
      default: if (f32) min_col_f32(pf, r, inner, &v, &pos); else min_col_f64(pd, r, inner, &v, &pos); break;
      }
      if (want_index) ((int64_t *)j->ob)[c] = pos;
      else if (f32) ((float *)j->ob)[c] = (float)v;
      else ((double *)j->ob)[c] = v;
    }
    if (j->ib) j->ib[c] = pos;
  }
}

gs_status gs_cpu_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim) {
  int64_t outer, r, inner;
  layout(x, dim, &outer, &r, &inner);
  if (op == GS_R_SUM && dim < 0 && x->dtype != GS_INT64) {
    double s;
    GS_TRY(sum_all(x, &s));
    if (x->dtype == GS_FLOAT32) *(float *)gs_tensor_ptr(out) = (float)s; else *(double *)gs_tensor_ptr(out) = s;
    return GS_OK;
  }
  reduce_job j = {op, x->dtype, r, inner, gs_tensor_ptr(x), gs_tensor_ptr(out), idx ? (int64_t *)gs_tensor_ptr(idx) : NULL};
  return gs_parallel_for(outer * inner, outer * inner * r, reduce_cols, &j);
}

/* Softmax of one row of r elements at stride `inner`, in double for
 * float64 and float (with the vectorisable exp) for float32. */
#define SOFTMAX_ROW(T, NAME, EXP, LOG)                                            \
  static void NAME(T *o, const T *x, int64_t r, int64_t inner, bool take_log) {       \
    T mx = -INFINITY;                                                             \
    for (int64_t i = 0; i < r; i++) { T v = x[i * inner]; if (v > mx || v != v) mx = v; } \
    if (mx == -INFINITY) mx = 0;                                                  \
    double sum = 0;                                                               \
    for (int64_t i = 0; i < r; i++) sum += EXP(x[i * inner] - mx);                \
    if (take_log) { T ls = (T)LOG(sum); for (int64_t i = 0; i < r; i++) o[i * inner] = x[i * inner] - mx - ls; } \
    else { T inv = (T)(1.0 / sum); for (int64_t i = 0; i < r; i++) o[i * inner] = EXP(x[i * inner] - mx) * inv; } \
  }
SOFTMAX_ROW(float, softmax_row_f32, fast_expf, log)
SOFTMAX_ROW(double, softmax_row_f64, exp, log)

typedef struct { int64_t r, inner; bool f32, log; char *ob; const char *xb; } softmax_job;

static void softmax_rows(int64_t begin, int64_t end, void *arg) {
  const softmax_job *j = arg;
  for (int64_t c = begin; c < end; c++) {
    int64_t o = c / j->inner, k = c % j->inner, off = o * j->r * j->inner + k;
    if (j->f32) softmax_row_f32((float *)j->ob + off, (const float *)j->xb + off, j->r, j->inner, j->log);
    else softmax_row_f64((double *)j->ob + off, (const double *)j->xb + off, j->r, j->inner, j->log);
  }
}

gs_status gs_cpu_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log) {
  int64_t outer, r, inner;
  layout(x, dim, &outer, &r, &inner);
  softmax_job j = {r, inner, x->dtype == GS_FLOAT32, log, gs_tensor_ptr(out), gs_tensor_ptr(x)};
  return gs_parallel_for(outer * inner, outer * inner * r * 8, softmax_rows, &j);
}
