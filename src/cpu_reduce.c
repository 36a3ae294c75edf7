/* cpu_reduce.c: reductions and softmax over a contiguous input viewed as
 * [outer, R, inner] (R the reduced extent). float32 sums accumulate in
 * blocks of float lanes that vectorise, each block added into a double,
 * which keeps both speed and accuracy. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include "backend_cpu.h"
#include "cpu_math.h"

static void layout(const gs_tensor *x, int dim, int64_t *outer, int64_t *r, int64_t *inner) {
  *outer = 1; *inner = 1; *r = 1;
  if (dim < 0) { *r = gs_numel(x); return; }
  for (int d = 0; d < dim; d++) *outer *= x->shape[d];
  *r = x->shape[dim];
  for (int d = dim + 1; d < x->ndim; d++) *inner *= x->shape[d];
}

/* Sum of n contiguous floats: 16 float lanes per block of 4096, blocks in double. */
static double sum_f32(const float *p, int64_t n) {
  double total = 0;
  for (int64_t b = 0; b < n; b += 4096) {
    int64_t m = n - b < 4096 ? n - b : 4096;
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= m; i += 16)
      for (int j = 0; j < 16; j++) acc[j] += p[b + i + j];
    double part = 0;
    for (int j = 0; j < 16; j++) part += acc[j];
    for (; i < m; i++) part += p[b + i];
    total += part;
  }
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

/* Whole-tensor float sum split across threads. */
static double sum_all(const gs_tensor *x) {
  int64_t n = gs_numel(x);
  const char *p = gs_tensor_ptr(x);
  bool f32 = x->dtype == GS_FLOAT32;
  if (n < 4 * GS_PARALLEL_GRAIN) return f32 ? sum_f32((const float *)p, n) : sum_f64((const double *)p, n);
  int nt = omp_get_max_threads();
  double parts[256] = {0};
  if (nt > 256) nt = 256;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int t = 0; t < nt; t++) {
    int64_t b = n * t / nt, e = n * (t + 1) / nt;
    parts[t] = f32 ? sum_f32((const float *)p + b, e - b) : sum_f64((const double *)p + b, e - b);
  }
  double total = 0;
  for (int t = 0; t < nt; t++) total += parts[t];
  return total;
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

gs_status gs_cpu_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim) {
  int64_t outer, r, inner;
  layout(x, dim, &outer, &r, &inner);
  gs_dtype dt = x->dtype;
  const char *base = gs_tensor_ptr(x);
  char *ob = out ? gs_tensor_ptr(out) : NULL;
  int64_t *ib = idx ? (int64_t *)gs_tensor_ptr(idx) : NULL;
  bool want_index = op == GS_R_ARGMAX || op == GS_R_ARGMIN;
  if (op == GS_R_SUM && dim < 0 && dt != GS_INT64) {
    double s = sum_all(x);
    if (dt == GS_FLOAT32) *(float *)ob = (float)s; else *(double *)ob = s;
    return GS_OK;
  }
  int64_t ncols = outer * inner;
  bool par = ncols > 1 && ncols * r >= GS_PARALLEL_GRAIN;
#pragma omp parallel for if (par) schedule(static)
  for (int64_t c = 0; c < ncols; c++) {
    int64_t o = c / inner, k = c % inner, pos = 0;
    size_t es = gs_dtype_size(dt);
    const char *p = base + ((o * r) * inner + k) * (int64_t)es;
    if (dt == GS_INT64) {
      int64_t v = 0;
      const int64_t *q = (const int64_t *)p;
      switch (op) {
      case GS_R_SUM: sum_col_i64(q, r, inner, &v, &pos); break;
      case GS_R_PROD: prod_col_i64(q, r, inner, &v, &pos); break;
      case GS_R_MAX: case GS_R_ARGMAX: max_col_i64(q, r, inner, &v, &pos); break;
      default: min_col_i64(q, r, inner, &v, &pos); break;
      }
      if (want_index) ((int64_t *)ob)[c] = pos;
      else ((int64_t *)ob)[c] = v;
    } else {
      double v = 0;
      bool f32 = dt == GS_FLOAT32;
      switch (op) {
      case GS_R_SUM:
        if (f32) sum_col_f32((const float *)p, r, inner, &v, &pos); else sum_col_f64((const double *)p, r, inner, &v, &pos);
        break;
      case GS_R_PROD:
        if (f32) prod_col_f32((const float *)p, r, inner, &v, &pos); else prod_col_f64((const double *)p, r, inner, &v, &pos);
        break;
      case GS_R_MAX: case GS_R_ARGMAX:
        if (f32) max_col_f32((const float *)p, r, inner, &v, &pos); else max_col_f64((const double *)p, r, inner, &v, &pos);
        break;
      default:
        if (f32) min_col_f32((const float *)p, r, inner, &v, &pos); else min_col_f64((const double *)p, r, inner, &v, &pos);
        break;
      }
      if (want_index) ((int64_t *)ob)[c] = pos;
      else if (f32) ((float *)ob)[c] = (float)v;
      else ((double *)ob)[c] = v;
    }
    if (ib) ib[c] = pos;
  }
  return GS_OK;
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

gs_status gs_cpu_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log) {
  int64_t outer, r, inner;
  layout(x, dim, &outer, &r, &inner);
  int64_t ncols = outer * inner;
  bool par = ncols > 1 && ncols * r >= GS_PARALLEL_GRAIN;
  bool f32 = x->dtype == GS_FLOAT32;
  char *ob = gs_tensor_ptr(out);
  const char *xb = gs_tensor_ptr(x);
#pragma omp parallel for if (par) schedule(static)
  for (int64_t c = 0; c < ncols; c++) {
    int64_t o = c / inner, k = c % inner, off = o * r * inner + k;
    if (f32) softmax_row_f32((float *)ob + off, (const float *)xb + off, r, inner, log);
    else softmax_row_f64((double *)ob + off, (const double *)xb + off, r, inner, log);
  }
  return GS_OK;
}
