/* cpu_conv.c: the convolution's data movement on the CPU (gs_backend.h's
 * im2col and col2im slots; the products are the gemm slot's). Both are
 * plain loops split over the bound worker set (gs_parallel.h): im2col by
 * rows of the column matrix, col2im by image planes, so no two threads
 * ever write the same element and the sums come out the same on every
 * run and every thread count. */
#include <string.h>
#include "backend/cpu/cpu_conv.h"
#include "core/gs_parallel.h"
#include "backend/cpu/cpu_isa.h" /* a copy of the loops per instruction set */

typedef struct {
  const gs_conv_geom *g;
  char *col;          /* [C*kh*kw, N, oh*ow] */
  char *x;            /* [N, C, H, W] */
  int64_t N, C, H, W;
  bool f64;
} conv_job;

/* The output columns ox in [*lo, *hi) whose input column ox*s + off lies
 * in [0, size): the rest read padding. */
static void valid_range(int64_t n_out, int64_t s, int64_t off, int64_t size, int64_t *lo, int64_t *hi) {
  /* smallest ox with ox*s + off >= 0, and one past the largest with ox*s + off <= size - 1 */
  /* ceil(-off / s) without -off + s - 1, which overflows for a stride near 2^63 */
  int64_t a = off >= 0 ? 0 : -off / s + (-off % s != 0);
  int64_t b = size - 1 - off < 0 ? 0 : (size - 1 - off) / s + 1;
  if (a > n_out) a = n_out;
  if (b > n_out) b = n_out;
  if (b < a) b = a;
  *lo = a;
  *hi = b;
}

/* ---- im2col: one row of col per (channel, kernel row, kernel column,
 * sample); a row is oh lines of ow values, each line one input row read
 * at stride sw (a memcpy when sw == 1), padding written as zeros. */
#define IM2COL_ROWS(T)                                                                           \
  GS_ISA_INLINE static void im2col_rows_##T##_impl(int64_t begin, int64_t end, void *ctx) {      \
    conv_job *j = ctx;                                                                           \
    const gs_conv_geom *g = j->g;                                                                \
    int64_t L = g->oh * g->ow, kk = g->kh * g->kw;                                               \
    for (int64_t r = begin; r < end; r++) {                                                      \
      int64_t n = r % j->N, row = r / j->N; /* row = (c*kh + i)*kw + jj */                       \
      int64_t c = row / kk, i = row % kk / g->kw, jj = row % g->kw;                              \
      const T *plane = (const T *)j->x + (n * j->C + c) * j->H * j->W;                           \
      T *dst = (T *)j->col + (row * j->N + n) * L;                                               \
      int64_t xoff = jj * g->dw - g->pw, lo, hi;                                                 \
      valid_range(g->ow, g->sw, xoff, j->W, &lo, &hi);                                           \
      for (int64_t oy = 0; oy < g->oh; oy++, dst += g->ow) {                                     \
        int64_t iy = oy * g->sh - g->ph + i * g->dh;                                             \
        if (iy < 0 || iy >= j->H) { memset(dst, 0, sizeof(T) * (size_t)g->ow); continue; }       \
        const T *src = plane + iy * j->W; /* input column ox*sw + xoff */                        \
        for (int64_t ox = 0; ox < lo; ox++) dst[ox] = 0;                                         \
        if (g->sw == 1) memcpy(dst + lo, src + lo + xoff, sizeof(T) * (size_t)(hi - lo));        \
        else for (int64_t ox = lo; ox < hi; ox++) dst[ox] = src[ox * g->sw + xoff];              \
        for (int64_t ox = hi; ox < g->ow; ox++) dst[ox] = 0;                                     \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
  GS_ISA_VOID(im2col_rows_##T, (int64_t begin, int64_t end, void *ctx), (begin, end, ctx))
IM2COL_ROWS(float)
IM2COL_ROWS(double)

gs_status gs_cpu_im2col(gs_tensor *col, const gs_tensor *x, const gs_conv_geom *g) {
  conv_job j = {g, gs_tensor_ptr(col), gs_tensor_ptr(x), x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                x->dtype == GS_FLOAT64};
  int64_t rows = j.C * g->kh * g->kw * j.N, L = g->oh * g->ow;
  if (rows == 0 || L == 0) return GS_OK;
  return gs_parallel_for(rows, rows * L, j.f64 ? im2col_rows_double : im2col_rows_float, &j);
}

/* ---- col2im: one image plane (sample, channel) per unit of work. The
 * plane is zeroed, then each kernel offset (i, jj) in order adds its oh x
 * ow values at their input positions: every element receives its terms
 * in (i, jj) order, the order the CUDA kernel's per-element gather uses,
 * so both give the same sums. */
#define COL2IM_PLANES(T)                                                                         \
  GS_ISA_INLINE static void col2im_planes_##T##_impl(int64_t begin, int64_t end, void *ctx) {    \
    conv_job *j = ctx;                                                                           \
    const gs_conv_geom *g = j->g;                                                                \
    int64_t L = g->oh * g->ow;                                                                   \
    for (int64_t p = begin; p < end; p++) {                                                      \
      int64_t n = p / j->C, c = p % j->C;                                                        \
      T *plane = (T *)j->x + p * j->H * j->W;                                                    \
      memset(plane, 0, sizeof(T) * (size_t)(j->H * j->W));                                       \
      for (int64_t i = 0; i < g->kh; i++)                                                        \
        for (int64_t jj = 0; jj < g->kw; jj++) {                                                 \
          int64_t row = (c * g->kh + i) * g->kw + jj;                                            \
          const T *src = (const T *)j->col + (row * j->N + n) * L;                               \
          int64_t xoff = jj * g->dw - g->pw, lo, hi;                                             \
          valid_range(g->ow, g->sw, xoff, j->W, &lo, &hi);                                       \
          for (int64_t oy = 0; oy < g->oh; oy++) {                                               \
            int64_t iy = oy * g->sh - g->ph + i * g->dh;                                         \
            if (iy < 0 || iy >= j->H) continue;                                                  \
            T *dst = plane + iy * j->W; /* input column ox*sw + xoff */                          \
            const T *line = src + oy * g->ow;                                                    \
            for (int64_t ox = lo; ox < hi; ox++) dst[ox * g->sw + xoff] += line[ox];             \
          }                                                                                      \
        }                                                                                        \
    }                                                                                            \
  }                                                                                              \
  GS_ISA_VOID(col2im_planes_##T, (int64_t begin, int64_t end, void *ctx), (begin, end, ctx))
COL2IM_PLANES(float)
COL2IM_PLANES(double)

gs_status gs_cpu_col2im(gs_tensor *x, const gs_tensor *col, const gs_conv_geom *g) {
  conv_job j = {g, gs_tensor_ptr(col), gs_tensor_ptr(x), x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                x->dtype == GS_FLOAT64};
  int64_t planes = j.N * j.C, kk = g->kh * g->kw;
  if (planes == 0 || j.H * j.W == 0) return GS_OK;
  return gs_parallel_for(planes, planes * (j.H * j.W + kk * g->oh * g->ow),
                         j.f64 ? col2im_planes_double : col2im_planes_float, &j);
}
