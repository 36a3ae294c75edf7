/* cpu_pool.c: 2-d pooling (max, average, adaptive) and resizing (nearest,
 * bilinear) on the CPU, forward and backward, for float32 and float64
 * planes [planes, h, w] (planes = N*C). The loops themselves are in
 * cpu_pool_impl.h, once per type; this file has the window arithmetic
 * every type shares and splits the planes over the worker threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cpu/cpu_pool.h"
#include "core/gs_parallel.h"
#include "backend/cpu/cpu_isa.h" /* a copy of the loops per instruction set */

/* The window of output position i along rows (or columns): cells
 * [*a, *b) stepping *step, clipped to the plane (gs_pool2d_params). */
static void pool_rows(const gs_pool2d_params *p, int64_t i, int64_t *a, int64_t *b, int64_t *step, bool rows) {
  int64_t size = rows ? p->h : p->w, out = rows ? p->oh : p->ow;
  int64_t k = rows ? p->kh : p->kw, s = rows ? p->sh : p->sw, pad = rows ? p->ph : p->pw;
  int64_t d = rows ? p->dh : p->dw;
  *step = 1;
  switch (p->kind) {
  case GS_POOL_MAX: {
    int64_t start = i * s - pad, end = start + (k - 1) * d + 1;
    while (start < 0) start += d;
    *a = start;
    *b = end < size ? end : size;
    *step = d;
    return;
  }
  case GS_POOL_AVG: {
    int64_t start = i * s - pad, end = start + k;
    if (end > size + pad) end = size + pad;
    *a = start < 0 ? 0 : start;
    *b = end < size ? end : size;
    return;
  }
  default: /* adaptive: PyTorch's split of size into out windows */
    *a = i * size / out;
    *b = ((i + 1) * size + out - 1) / out;
    return;
  }
}

/* The number an average divides by for output (i, j). */
static int64_t pool_divisor(const gs_pool2d_params *p, int64_t i, int64_t j) {
  int64_t y0, y1, x0, x1, st;
  pool_rows(p, i, &y0, &y1, &st, true);
  pool_rows(p, j, &x0, &x1, &st, false);
  if (p->kind == GS_POOL_AVG && p->count_include_pad) {
    /* the window as it lies in the padded plane (past h + ph not counted) */
    int64_t ys = i * p->sh - p->ph, ye = ys + p->kh, xs = j * p->sw - p->pw, xe = xs + p->kw;
    if (ye > p->h + p->ph) ye = p->h + p->ph;
    if (xe > p->w + p->pw) xe = p->w + p->pw;
    return (ye - ys) * (xe - xs);
  }
  return (y1 - y0) * (x1 - x0);
}

#define T float
#define FN(name) name##_f32
#include "backend/cpu/cpu_pool_impl.h"
#undef T
#undef FN
#define T double
#define FN(name) name##_f64
#include "backend/cpu/cpu_pool_impl.h"
#undef T
#undef FN

/* ---- slots: split the planes over threads ---- */

typedef struct {
  const gs_pool2d_params *p;
  const gs_resize_params *r;
  const void *tab;
  gs_tensor *out, *idx;
  const gs_tensor *in, *aux;
  bool dbl, backward;
} job;

GS_ISA_INLINE static void pool_range_impl(int64_t p0, int64_t p1, void *ctx) {
  job *j = ctx;
  int64_t *am = j->backward ? (j->aux ? (int64_t *)gs_tensor_ptr(j->aux) : NULL)
                            : (j->idx ? (int64_t *)gs_tensor_ptr(j->idx) : NULL);
  void *o = gs_tensor_ptr(j->out);
  const void *x = gs_tensor_ptr(j->in);
  if (j->backward) {
    if (j->dbl) pool_bwd_f64(j->p, o, x, am, p0, p1);
    else pool_bwd_f32(j->p, o, x, am, p0, p1);
  } else {
    if (j->dbl) pool_fwd_f64(j->p, o, am, x, p0, p1);
    else pool_fwd_f32(j->p, o, am, x, p0, p1);
  }
}
GS_ISA_VOID(pool_range, (int64_t p0, int64_t p1, void *ctx), (p0, p1, ctx))

static int64_t window_cells(const gs_pool2d_params *p) {
  if (p->kind == GS_POOL_MAX || p->kind == GS_POOL_AVG) return (int64_t)p->kh * p->kw;
  return ((p->h + p->oh - 1) / p->oh + 1) * ((p->w + p->ow - 1) / p->ow + 1);
}

gs_status gs_cpu_pool2d(const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax, const gs_tensor *x) {
  job j = {.p = p, .out = out, .idx = argmax, .in = x, .dbl = x->dtype == GS_FLOAT64};
  return gs_parallel_for(p->planes, p->planes * p->oh * p->ow * window_cells(p), pool_range, &j);
}

gs_status gs_cpu_pool2d_backward(const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                                 const gs_tensor *argmax) {
  job j = {.p = p, .out = gx, .in = gy, .aux = argmax, .dbl = gy->dtype == GS_FLOAT64, .backward = true};
  return gs_parallel_for(p->planes, p->planes * (p->h * p->w + p->oh * p->ow * window_cells(p)), pool_range, &j);
}

GS_ISA_INLINE static void resize_range_impl(int64_t p0, int64_t p1, void *ctx) {
  job *j = ctx;
  void *o = gs_tensor_ptr(j->out);
  const void *x = gs_tensor_ptr(j->in);
  if (j->backward) {
    if (j->dbl) resize_bwd_f64(j->tab, o, x, p0, p1);
    else resize_bwd_f32(j->tab, o, x, p0, p1);
  } else {
    if (j->dbl) resize_fwd_f64(j->tab, o, x, p0, p1);
    else resize_fwd_f32(j->tab, o, x, p0, p1);
  }
}
GS_ISA_VOID(resize_range, (int64_t p0, int64_t p1, void *ctx), (p0, p1, ctx))

/* Builds the row and column tables (one allocation), then runs the job. */
static gs_status resize_run(const gs_resize_params *p, gs_tensor *out, const gs_tensor *in, bool backward) {
  bool dbl = in->dtype == GS_FLOAT64;
  size_t ts = dbl ? sizeof(double) : sizeof(float);
  size_t n = (size_t)(p->oh + p->ow);
  char *mem = malloc(n * (2 * sizeof(int64_t) + ts));
  if (!mem) return gs_error_code(GS_ERR_OOM, "out of memory for a resize's tables");
  int64_t *r0 = (int64_t *)mem, *r1 = r0 + p->oh, *c0 = r1 + p->oh, *c1 = c0 + p->ow;
  void *rl = c1 + p->ow, *cl = (char *)rl + ts * (size_t)p->oh;
  job j = {.r = p, .out = out, .in = in, .dbl = dbl, .backward = backward};
  resize_tab_f64 t64 = {p, r0, r1, c0, c1, rl, cl};
  resize_tab_f32 t32 = {p, r0, r1, c0, c1, rl, cl};
  if (dbl) {
    resize_axis_f64(p, p->h, p->oh, p->scale_h, r0, r1, rl);
    resize_axis_f64(p, p->w, p->ow, p->scale_w, c0, c1, cl);
    j.tab = &t64;
  } else {
    resize_axis_f32(p, p->h, p->oh, p->scale_h, r0, r1, rl);
    resize_axis_f32(p, p->w, p->ow, p->scale_w, c0, c1, cl);
    j.tab = &t32;
  }
  gs_status s = gs_parallel_for(p->planes, p->planes * (p->oh * p->ow * 4 + (backward ? p->h * p->w : 0)),
                                resize_range, &j);
  free(mem);
  return s;
}

gs_status gs_cpu_resize(const gs_resize_params *p, gs_tensor *out, const gs_tensor *x) {
  return resize_run(p, out, x, false);
}

gs_status gs_cpu_resize_backward(const gs_resize_params *p, gs_tensor *gx, const gs_tensor *gy) {
  return resize_run(p, gx, gy, true);
}
