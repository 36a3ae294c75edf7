/* cpu_norm.c: batch normalisation's three kernels on the CPU (contracts in
 * gs_backend.h): per-channel statistics of x [N, C, S], per-channel sums
 * for the backward pass, and the per-channel affine map both passes use.
 * Statistics and sums accumulate in double in a fixed order (n, then s),
 * one channel per thread, so the results do not depend on the thread
 * count. */
#include <string.h>
#include "backend/cpu/cpu_norm.h"
#include "core/gs_parallel.h"
#include "backend/cpu/cpu_isa.h" /* a copy of the elementwise loop per instruction set */

/* x [N, C, S] as the kernels see it */
typedef struct { int64_t n, c, s; } ncs;

static ncs layout(const gs_tensor *x) {
  ncs l = {x->shape[0], x->ndim > 1 ? x->shape[1] : 1, 1};
  for (int d = 2; d < x->ndim; d++) l.s *= x->shape[d];
  return l;
}

typedef struct {
  ncs l;
  bool dbl;
  void *out;                     /* stats or sums [2, C], or the affine map's output */
  const void *a, *x, *mean, *k;  /* the operands each kernel reads */
} job;

/* Element i of a float32 or float64 array as a double. */
static inline double at(const void *p, bool dbl, int64_t i) {
  return dbl ? ((const double *)p)[i] : (double)((const float *)p)[i];
}
static inline void put(void *p, bool dbl, int64_t i, double v) {
  if (dbl) ((double *)p)[i] = v;
  else ((float *)p)[i] = (float)v;
}

/* Sum of x[n, c, :] - shift over every n, in double. */
static double channel_sum(const job *j, const void *x, int64_t c, double shift, bool square) {
  double acc = 0;
  for (int64_t n = 0; n < j->l.n; n++) {
    int64_t base = (n * j->l.c + c) * j->l.s;
    if (j->dbl) {
      const double *p = (const double *)x + base;
      for (int64_t s = 0; s < j->l.s; s++) { double d = p[s] - shift; acc += square ? d * d : d; }
    } else {
      const float *p = (const float *)x + base;
      for (int64_t s = 0; s < j->l.s; s++) { double d = (double)p[s] - shift; acc += square ? d * d : d; }
    }
  }
  return acc;
}

/* mean, then the mean square deviation from it (two passes: exact for
 * data far from zero, where E[x^2] - E[x]^2 cancels) */
static void stats_range(int64_t c0, int64_t c1, void *ctx) {
  job *j = ctx;
  double m = (double)(j->l.n * j->l.s);
  for (int64_t c = c0; c < c1; c++) {
    double mean = channel_sum(j, j->x, c, 0, false) / m;
    double var = channel_sum(j, j->x, c, mean, true) / m;
    put(j->out, j->dbl, c, mean);
    put(j->out, j->dbl, j->l.c + c, var);
  }
}

gs_status gs_cpu_bn_stats(gs_tensor *stats, const gs_tensor *x) {
  job j = {layout(x), x->dtype == GS_FLOAT64, gs_tensor_ptr(stats), NULL, gs_tensor_ptr(x), NULL, NULL};
  return gs_parallel_for(j.l.c, 2 * gs_numel(x), stats_range, &j);
}

/* sum(gy) and sum(gy * (x - mean)) per channel */
static void reduce_range(int64_t c0, int64_t c1, void *ctx) {
  job *j = ctx;
  for (int64_t c = c0; c < c1; c++) {
    double mean = at(j->mean, j->dbl, c), s1 = 0, s2 = 0;
    for (int64_t n = 0; n < j->l.n; n++) {
      int64_t base = (n * j->l.c + c) * j->l.s;
      for (int64_t s = 0; s < j->l.s; s++) {
        double g = at(j->a, j->dbl, base + s);
        s1 += g;
        s2 += g * (at(j->x, j->dbl, base + s) - mean);
      }
    }
    put(j->out, j->dbl, c, s1);
    put(j->out, j->dbl, j->l.c + c, s2);
  }
}

gs_status gs_cpu_bn_reduce(gs_tensor *sums, const gs_tensor *gy, const gs_tensor *x, const gs_tensor *mean) {
  job j = {layout(x), x->dtype == GS_FLOAT64, gs_tensor_ptr(sums), gs_tensor_ptr(gy), gs_tensor_ptr(x),
           gs_tensor_ptr(mean), NULL};
  return gs_parallel_for(j.l.c, 2 * gs_numel(x), reduce_range, &j);
}

/* out = k0 * a + k1 * (x - k2) + k3 over rows r = n * C + c of S values */
#define ELEMT_LOOP(T)                                                           \
  do {                                                                          \
    const T *k = j->k, *x = j->x, *a = j->a;                                    \
    T *out = j->out;                                                            \
    for (int64_t r = r0; r < r1; r++) {                                         \
      int64_t c = r % j->l.c, base = r * j->l.s;                                \
      T k0 = k[c], k1 = k[j->l.c + c], k2 = k[2 * j->l.c + c], k3 = k[3 * j->l.c + c]; \
      if (a)                                                                    \
        for (int64_t s = 0; s < j->l.s; s++)                                    \
          out[base + s] = k0 * a[base + s] + k1 * (x[base + s] - k2) + k3;      \
      else                                                                      \
        for (int64_t s = 0; s < j->l.s; s++) out[base + s] = k1 * (x[base + s] - k2) + k3; \
    }                                                                           \
  } while (0)

GS_ISA_INLINE static void elemt_range_impl(int64_t r0, int64_t r1, void *ctx) {
  job *j = ctx;
  if (j->dbl) ELEMT_LOOP(double);
  else ELEMT_LOOP(float);
}
/* (the sums above are one double chain each: no vector copy would change them) */
GS_ISA_VOID(elemt_range, (int64_t r0, int64_t r1, void *ctx), (r0, r1, ctx))

gs_status gs_cpu_bn_elemt(gs_tensor *out, const gs_tensor *a, const gs_tensor *x, const gs_tensor *k) {
  job j = {layout(x), x->dtype == GS_FLOAT64, gs_tensor_ptr(out), a ? gs_tensor_ptr(a) : NULL, gs_tensor_ptr(x),
           NULL, gs_tensor_ptr(k)};
  return gs_parallel_for(j.l.n * j.l.c, gs_numel(x), elemt_range, &j);
}
