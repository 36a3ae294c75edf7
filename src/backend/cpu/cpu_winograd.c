/* cpu_winograd.c: 3x3 convolutions with stride 1 by Winograd's minimal
 * filtering F(2x2, 3x3), float32 (gs_backend.h's conv3x3_wino slots).
 *
 * Why: im2col + GEMM spends 9 multiply-adds per output, input channel and
 * output channel; F(2x2, 3x3) spends 16 per 2x2 output tile, 4 per output,
 * 2.25 times fewer, in 16 independent products that OpenBLAS runs at the
 * same speed as im2col's. The transforms in between are cheap loops.
 *
 * The matrices (F(2,3); each 2-d transform applies the 1-d one to the
 * columns, then to the rows):
 *   input   d 4x4 -> V = B^T d B,  B^T d: (d0 - d2, d1 + d2, d2 - d1, d1 - d3)
 *   weight  g 3x3 -> U = G g G^T,  G g:   (g0, (g0+g1+g2)/2, (g0-g1+g2)/2, g2)
 *   output  M 4x4 -> Y = A^T M A,  A^T m: (m0 + m1 + m2, m1 - m2 - m3)
 * and their adjoints for the weight gradient:
 *   dY 2x2 -> dM = A dY A^T,      A y:   (y0, y0 + y1, y0 - y1, -y1)
 *   dU 4x4 -> dg = G^T dU G,      G^T u: (u0 + (u1+u2)/2, (u1-u2)/2, (u1+u2)/2 + u3)
 *
 * Layout, per chunk of samples (Tc = the chunk's 2x2 tiles):
 *   U [16][Co][Ci], V [16][Ci][Tc], M [16][Co][Tc],  M[xi] = U[xi] @ V[xi]
 * The tile of output (oy, ox) = (2ty, 2tx) reads the input rows and
 * columns from (2ty - ph, 2tx - pw), 4 of each, 0 outside the input: any
 * padding (negative too: the input gradient's 2 - pad), any size; a tile
 * past the output's edge writes only its valid part.
 * Work is split over the bound worker set (gs_parallel.h): transforms by
 * (sample, channel) plane, the 16 products one per chunk of work; every
 * element is written by one thread, and sums run in a fixed order, so the
 * results do not depend on the thread count. */
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cpu/cpu_winograd.h"
#include "core/gs_parallel.h"
#include "backend/cpu/cpu_isa.h" /* a copy of each transform per instruction set */

/* The transformed buffers (V and M) of one chunk stay under this many
 * bytes: big enough for long products, small enough to stay in L2/L3
 * between the transform that writes them and the product that reads them. */
#define WINO_CHUNK_BYTES ((size_t)6 << 20)

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single(void) { openblas_set_num_threads(1); }

/* One cached scratch block, reused call after call: freeing tens of MiB
 * and getting them again each step makes the kernel zero fresh pages
 * every time (clear_page in a ResNet step's profile). One block, taken
 * under a lock: a second caller meanwhile gets its own. */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static float *cache_buf;
static size_t cache_size;

static float *scratch_get(size_t bytes) {
  pthread_mutex_lock(&cache_mu);
  float *p = NULL;
  if (cache_buf && cache_size >= bytes) { p = cache_buf; cache_buf = NULL; }
  pthread_mutex_unlock(&cache_mu);
  return p ? p : malloc(bytes);
}

static void scratch_put(float *p, size_t bytes) {
  if (!p) return;
  pthread_mutex_lock(&cache_mu);
  if (!cache_buf || cache_size < bytes) {
    float *old = cache_buf;
    cache_buf = p;
    cache_size = bytes;
    p = old;
  }
  pthread_mutex_unlock(&cache_mu);
  free(p);
}

void gs_cpu_wino_release_cache(void) {
  pthread_mutex_lock(&cache_mu);
  free(cache_buf);
  cache_buf = NULL;
  cache_size = 0;
  pthread_mutex_unlock(&cache_mu);
}

typedef struct {
  const float *x, *w, *b, *gy;
  float *y, *U, *V, *M;
  int64_t Ci, Co, H, W, oh, ow, ph, pw, th, tw;
  int64_t N, n0, ns, Tc; /* the chunk: samples [n0, n0 + ns) of N, Tc = ns*th*tw */
  int64_t parts;         /* weight gradient: U holds this many partial sums (0: one) */
  bool flip, accumulate; /* weight read rotated/swapped; products add to U */
  atomic_bool oom;       /* a chunk could not get its scratch */
} wino_job;

/* ---- the weight: U[xi][o][i] = (G g G^T)[xi] of kernel g = w[o][i]
 * (flip: w[i][o] rotated 180 degrees, the input gradient's kernel).
 * Rows o of U in [begin, end), in segments of WT_SEG kernels along i: the
 * segment's 9 taps are first gathered into 9 contiguous lines (flip reads
 * the kernel backwards: g[k] at w[(i*Co + o)*9 + 8 - k]), then G g and
 * (G g) G^T run down those lines and write 16 contiguous runs of U, loops
 * the compiler vectorizes (kernel by kernel, unvectorized, this was 16% of
 * the 512-channel 4x4 layer's step). */
#define WT_SEG 128
GS_ISA_INLINE static void weight_tf_impl(int64_t begin, int64_t end, void *ctx) {
  wino_job *j = ctx;
  int64_t us = j->Co * j->Ci;
  float g[9][WT_SEG], t[12][WT_SEG];
  for (int64_t o = begin; o < end; o++) {
    for (int64_t i0 = 0; i0 < j->Ci; i0 += WT_SEG) {
      int64_t ni = j->Ci - i0 < WT_SEG ? j->Ci - i0 : WT_SEG;
      for (int64_t i = 0; i < ni; i++) {
        const float *src = j->flip ? j->w + ((i0 + i) * j->Co + o) * 9 + 8 : j->w + (o * j->Ci + i0 + i) * 9;
        int64_t step = j->flip ? -1 : 1;
        for (int k = 0; k < 9; k++) g[k][i] = src[k * step];
      }
      for (int c = 0; c < 3; c++) { /* t = G g, 4x3: t[a*3 + c] */
        const float *g0 = g[c], *g1 = g[3 + c], *g2 = g[6 + c];
        float *ta = t[c], *tb = t[3 + c], *tc = t[6 + c], *td = t[9 + c];
        for (int64_t i = 0; i < ni; i++) {
          ta[i] = g0[i]; tb[i] = 0.5f * (g0[i] + g1[i] + g2[i]); tc[i] = 0.5f * (g0[i] - g1[i] + g2[i]);
          td[i] = g2[i];
        }
      }
      for (int a = 0; a < 4; a++) { /* U = t G^T, row a of the 4x4 */
        const float *t0 = t[a * 3], *t1 = t[a * 3 + 1], *t2 = t[a * 3 + 2];
        float *d0 = j->U + (a * 4) * us + o * j->Ci + i0, *d1 = d0 + us, *d2 = d1 + us, *d3 = d2 + us;
        for (int64_t i = 0; i < ni; i++) {
          d0[i] = t0[i]; d1[i] = 0.5f * (t0[i] + t1[i] + t2[i]); d2[i] = 0.5f * (t0[i] - t1[i] + t2[i]);
          d3[i] = t2[i];
        }
      }
    }
  }
}
GS_ISA_VOID(weight_tf, (int64_t begin, int64_t end, void *ctx), (begin, end, ctx))

/* ---- the input: V[xi][c][t] for each tile t of plane (sample, c).
 * A tile row is done in segments of up to SEG tiles: the segment's 4
 * input rows are copied into zero-padded lines (no bounds checks after
 * that), B^T is applied down the columns of the whole segment at once,
 * then B along each tile's 4 columns; both loops run over contiguous
 * memory or stride 2, which the compiler vectorizes. */
#define SEG 128
#define SEG_W (2 * SEG + 2)
GS_ISA_INLINE static void input_tf_impl(int64_t begin, int64_t end, void *ctx) {
  wino_job *j = ctx;
  int64_t T = j->th * j->tw, xs = j->Ci * j->Tc;
  float line[4][SEG_W], t[4][SEG_W];
  for (int64_t p = begin; p < end; p++) {
    int64_t s = p / j->Ci, c = p % j->Ci;
    const float *plane = j->x + ((j->n0 + s) * j->Ci + c) * j->H * j->W;
    float *v = j->V + c * j->Tc + s * T;
    for (int64_t ty = 0; ty < j->th; ty++)
      for (int64_t t0 = 0; t0 < j->tw; t0 += SEG) {
        int64_t nt = j->tw - t0 < SEG ? j->tw - t0 : SEG, lw = 2 * nt + 2;
        int64_t ix0 = 2 * t0 - j->pw; /* input column of line[.][0] */
        /* the line's columns [lo, hi) lie inside the input */
        int64_t lo = ix0 < 0 ? -ix0 : 0, hi = j->W - ix0 < lw ? j->W - ix0 : lw;
        for (int r = 0; r < 4; r++) {
          int64_t iy = 2 * ty - j->ph + r;
          float *dst = line[r];
          /* plain loops, not memcpy/memset: GCC turns those into `rep
           * movs`, whose start-up cost was a quarter of this function on
           * lines of 10 to 60 floats */
          if (iy < 0 || iy >= j->H || hi <= lo) {
            for (int64_t q = 0; q < lw; q++) dst[q] = 0;
            continue;
          }
          const float *src = plane + iy * j->W + ix0;
          for (int64_t q = 0; q < lo; q++) dst[q] = 0;
          for (int64_t q = lo; q < hi; q++) dst[q] = src[q];
          for (int64_t q = hi; q < lw; q++) dst[q] = 0;
        }
        for (int64_t q = 0; q < lw; q++) { /* t = B^T d, down the columns */
          float d0 = line[0][q], d1 = line[1][q], d2 = line[2][q], d3 = line[3][q];
          t[0][q] = d0 - d2; t[1][q] = d1 + d2; t[2][q] = d2 - d1; t[3][q] = d1 - d3;
        }
        float *vt = v + ty * j->tw + t0;
        for (int a = 0; a < 4; a++) { /* V = t B, along each tile's row */
          const float *ta = t[a];
          float *v0 = vt + (a * 4) * xs, *v1 = v0 + xs, *v2 = v1 + xs, *v3 = v2 + xs;
          for (int64_t k = 0; k < nt; k++) {
            float a0 = ta[2 * k], a1 = ta[2 * k + 1], a2 = ta[2 * k + 2], a3 = ta[2 * k + 3];
            v0[k] = a0 - a2; v1[k] = a1 + a2; v2[k] = a2 - a1; v3[k] = a1 - a3;
          }
        }
      }
  }
}
GS_ISA_VOID(input_tf, (int64_t begin, int64_t end, void *ctx), (begin, end, ctx))

/* ---- the products, one position xi per unit of work */
static void product_fwd(int64_t xi, void *ctx) {
  wino_job *j = ctx;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)j->Co, (blasint)j->Tc, (blasint)j->Ci, 1.0f,
              j->U + xi * j->Co * j->Ci, (blasint)j->Ci, j->V + xi * j->Ci * j->Tc, (blasint)j->Tc, 0.0f,
              j->M + xi * j->Co * j->Tc, (blasint)j->Tc);
}

/* dU[xi] (+)= dM[xi] [Co, Tc] @ V[xi]^T [Tc, Ci] */
static void product_gw(int64_t xi, void *ctx) {
  wino_job *j = ctx;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)j->Co, (blasint)j->Ci, (blasint)j->Tc, 1.0f,
              j->M + xi * j->Co * j->Tc, (blasint)j->Tc, j->V + xi * j->Ci * j->Tc, (blasint)j->Tc,
              j->accumulate ? 1.0f : 0.0f, j->U + xi * j->Co * j->Ci, (blasint)j->Ci);
}

/* ---- the output: y plane (sample, o) from M's tiles, + bias.
 * One tile at a time where a tile is cut by the output's edge (odd
 * sizes); the full tiles of a full tile row in one loop over the row's
 * tiles, whose 16 inputs are contiguous runs of M, so it vectorizes (tile
 * by tile with the edge tests, it was 15% of a 56x56 layer's step). Both
 * compute every value with the same operations in the same order. */
static inline void output_tile(const wino_job *j, const float *mt, int64_t ms, float *out, bool two_rows,
                               bool two_cols, float bias) {
  float t[8];
  for (int q = 0; q < 4; q++) { /* t = A^T M, by columns */
    float m0 = mt[q * ms], m1 = mt[(4 + q) * ms], m2 = mt[(8 + q) * ms], m3 = mt[(12 + q) * ms];
    t[q] = m0 + m1 + m2; t[4 + q] = m1 - m2 - m3;
  }
  for (int a = 0; a < (two_rows ? 2 : 1); a++) { /* Y = t A, by rows */
    out[a * j->ow] = t[a * 4] + t[a * 4 + 1] + t[a * 4 + 2] + bias;
    if (two_cols) out[a * j->ow + 1] = t[a * 4 + 1] - t[a * 4 + 2] - t[a * 4 + 3] + bias;
  }
}

GS_ISA_INLINE static void output_tf_impl(int64_t begin, int64_t end, void *ctx) {
  wino_job *j = ctx;
  int64_t T = j->th * j->tw, ms = j->Co * j->Tc, full_x = j->ow / 2, full_y = j->oh / 2;
  float t[8][SEG];
  for (int64_t p = begin; p < end; p++) {
    int64_t s = p / j->Co, o = p % j->Co;
    float *plane = j->y + ((j->n0 + s) * j->Co + o) * j->oh * j->ow;
    const float *m = j->M + o * j->Tc + s * T;
    float bias = j->b ? j->b[o] : 0.0f;
    for (int64_t ty = 0; ty < j->th; ty++) {
      const float *mr = m + ty * j->tw;
      float *o0 = plane + 2 * ty * j->ow;
      if (ty < full_y) {
        float *o1 = o0 + j->ow;
        for (int64_t k0 = 0; k0 < full_x; k0 += SEG) { /* in segments of SEG tiles */
          int64_t nk = full_x - k0 < SEG ? full_x - k0 : SEG;
          for (int q = 0; q < 4; q++) { /* t = A^T M, by columns */
            const float *a0 = mr + q * ms + k0, *a1 = a0 + 4 * ms, *a2 = a0 + 8 * ms, *a3 = a0 + 12 * ms;
            float *tq = t[q], *uq = t[4 + q];
            for (int64_t k = 0; k < nk; k++) { tq[k] = a0[k] + a1[k] + a2[k]; uq[k] = a1[k] - a2[k] - a3[k]; }
          }
          float *r0 = o0 + 2 * k0, *r1 = o1 + 2 * k0;
          for (int64_t k = 0; k < nk; k++) { /* Y = t A, both rows */
            r0[2 * k] = t[0][k] + t[1][k] + t[2][k] + bias; r0[2 * k + 1] = t[1][k] - t[2][k] - t[3][k] + bias;
            r1[2 * k] = t[4][k] + t[5][k] + t[6][k] + bias; r1[2 * k + 1] = t[5][k] - t[6][k] - t[7][k] + bias;
          }
        }
      }
      for (int64_t tx = ty < full_y ? full_x : 0; tx < j->tw; tx++)
        output_tile(j, mr + tx, ms, o0 + 2 * tx, 2 * ty + 1 < j->oh, 2 * tx + 1 < j->ow, bias);
    }
  }
}
GS_ISA_VOID(output_tf, (int64_t begin, int64_t end, void *ctx), (begin, end, ctx))

/* ---- the output gradient: dM[xi][o][t] = (A dY A^T)[xi] of each 2x2
 * tile of gy plane (sample, o), 0 past the output's edge. As the output
 * transform: full tiles of full rows in one vector loop, the rest one by
 * one (it was 14% of a 56x56 layer's step tile by tile). */
static inline void grad_out_tile(const float *g, int64_t ow, bool two_rows, bool two_cols, float *mt, int64_t ms) {
  float y00 = g[0], y01 = two_cols ? g[1] : 0.0f;
  float y10 = two_rows ? g[ow] : 0.0f, y11 = two_rows && two_cols ? g[ow + 1] : 0.0f;
  /* A dY: rows (y0., y0. + y1., y0. - y1., -y1.) */
  float r[4][2] = {{y00, y01}, {y00 + y10, y01 + y11}, {y00 - y10, y01 - y11}, {-y10, -y11}};
  for (int a = 0; a < 4; a++) { /* (A dY) A^T, by rows */
    float p0 = r[a][0], p1 = r[a][1];
    mt[(a * 4 + 0) * ms] = p0;
    mt[(a * 4 + 1) * ms] = p0 + p1;
    mt[(a * 4 + 2) * ms] = p0 - p1;
    mt[(a * 4 + 3) * ms] = -p1;
  }
}

GS_ISA_INLINE static void grad_out_tf_impl(int64_t begin, int64_t end, void *ctx) {
  wino_job *j = ctx;
  int64_t T = j->th * j->tw, ms = j->Co * j->Tc, full_x = j->ow / 2, full_y = j->oh / 2;
  float r[8][SEG];
  for (int64_t p = begin; p < end; p++) {
    int64_t s = p / j->Co, o = p % j->Co;
    const float *plane = j->gy + ((j->n0 + s) * j->Co + o) * j->oh * j->ow;
    float *m = j->M + o * j->Tc + s * T;
    for (int64_t ty = 0; ty < j->th; ty++) {
      const float *g0 = plane + 2 * ty * j->ow;
      float *mr = m + ty * j->tw;
      if (ty < full_y) {
        const float *g1 = g0 + j->ow;
        for (int64_t k0 = 0; k0 < full_x; k0 += SEG) { /* in segments of SEG tiles */
          int64_t nk = full_x - k0 < SEG ? full_x - k0 : SEG;
          const float *h0 = g0 + 2 * k0, *h1 = g1 + 2 * k0;
          for (int64_t k = 0; k < nk; k++) { /* A dY: rows (y0., y0. + y1., y0. - y1., -y1.) */
            float y00 = h0[2 * k], y01 = h0[2 * k + 1], y10 = h1[2 * k], y11 = h1[2 * k + 1];
            r[0][k] = y00; r[1][k] = y01; r[2][k] = y00 + y10; r[3][k] = y01 + y11;
            r[4][k] = y00 - y10; r[5][k] = y01 - y11; r[6][k] = -y10; r[7][k] = -y11;
          }
          for (int a = 0; a < 4; a++) { /* (A dY) A^T, by rows */
            const float *p0 = r[2 * a], *p1 = r[2 * a + 1];
            float *d0 = mr + (a * 4) * ms + k0, *d1 = d0 + ms, *d2 = d1 + ms, *d3 = d2 + ms;
            for (int64_t k = 0; k < nk; k++) { d0[k] = p0[k]; d1[k] = p0[k] + p1[k]; d2[k] = p0[k] - p1[k]; d3[k] = -p1[k]; }
          }
        }
      }
      for (int64_t tx = ty < full_y ? full_x : 0; tx < j->tw; tx++)
        grad_out_tile(g0 + 2 * tx, j->ow, 2 * ty + 1 < j->oh, 2 * tx + 1 < j->ow, mr + tx, ms);
    }
  }
}
GS_ISA_VOID(grad_out_tf, (int64_t begin, int64_t end, void *ctx), (begin, end, ctx))

/* ---- gw[o][i] = G^T dU[.][o][i] G */
GS_ISA_INLINE static void weight_grad_tf_impl(int64_t begin, int64_t end, void *ctx) {
  wino_job *j = ctx;
  for (int64_t r = begin; r < end; r++) {
    int64_t o = r / j->Ci, i = r % j->Ci;
    float u[16], t[12];
    int64_t us = 16 * j->Co * j->Ci; /* the partial sums, added in part order */
    for (int xi = 0; xi < 16; xi++) u[xi] = j->U[(xi * j->Co + o) * j->Ci + i];
    for (int64_t q = 1; q < j->parts; q++)
      for (int xi = 0; xi < 16; xi++) u[xi] += j->U[q * us + (xi * j->Co + o) * j->Ci + i];
    for (int c = 0; c < 4; c++) { /* t = G^T dU, 3x4 */
      float u0 = u[c], u1 = u[4 + c], u2 = u[8 + c], u3 = u[12 + c];
      t[c] = u0 + 0.5f * (u1 + u2); t[4 + c] = 0.5f * (u1 - u2); t[8 + c] = 0.5f * (u1 + u2) + u3;
    }
    float *g = j->y + (o * j->Ci + i) * 9;
    for (int a = 0; a < 3; a++) { /* t G, by rows */
      float t0 = t[a * 4], t1 = t[a * 4 + 1], t2 = t[a * 4 + 2], t3 = t[a * 4 + 3];
      g[a * 3] = t0 + 0.5f * (t1 + t2); g[a * 3 + 1] = 0.5f * (t1 - t2); g[a * 3 + 2] = 0.5f * (t1 + t2) + t3;
    }
  }
}
GS_ISA_VOID(weight_grad_tf, (int64_t begin, int64_t end, void *ctx), (begin, end, ctx))

/* Samples per chunk: V and M under WINO_CHUNK_BYTES, at least one. */
static int64_t chunk_samples(int64_t N, int64_t Ci, int64_t Co, int64_t T) {
  double per = 16.0 * (double)(Ci + Co) * (double)T * sizeof(float);
  int64_t n = (int64_t)((double)WINO_CHUNK_BYTES / per);
  if (n < 1) n = 1;
  return n > N ? N : n;
}

static gs_status oom(void) { return gs_error_code(GS_ERR_OOM, "out of memory in the Winograd convolution"); }

/* Sets up the geometry common to both entry points; *buf gets U, V, M. */
static gs_status setup(wino_job *j, int64_t N, int64_t nu, float **buf, size_t *bytes) {
  pthread_once(&blas_once, blas_single);
  j->th = (j->oh + 1) / 2;
  j->tw = (j->ow + 1) / 2;
  int64_t T = j->th * j->tw;
  int64_t ns = chunk_samples(N, j->Ci, j->Co, T);
  size_t u = (size_t)(16 * j->Co * j->Ci), vm = (size_t)(16 * (j->Ci + j->Co) * ns * T);
  *bytes = sizeof(float) * (u * (size_t)nu + vm);
  *buf = scratch_get(*bytes);
  if (!*buf) return oom();
  j->U = *buf;
  j->V = j->U + u * (size_t)nu;
  j->M = j->V + (size_t)(16 * j->Ci * ns * T);
  j->ns = ns;
  return GS_OK;
}

/* Rough work per item for gs_parallel_for's decision to wake the pool. */
#define TF_COST 64

/* ---- the forward pass by whole chunks: each thread takes a chunk of
 * samples and runs its transform, 16 products and output transform in a
 * row, in its own scratch (its L2 and a share of L3), no barrier between. The
 * split by stage (above) waited at 3 barriers per chunk, and on this busy
 * 2-core host a thread descheduled at one left the other spinning. */
/* A thread's chunk: V and M under 4 MiB (the ResNet step ran at 13 to 16
 * examples/s with 1.5 MiB chunks, 16 with 4 and 8 MiB: below that the
 * products are small and OpenBLAS's packing dominates) */
#define WINO_THREAD_BYTES ((size_t)4 << 20)

/* Each thread's scratch, kept: the workers live as long as the process. */
static _Thread_local float *tl_buf;
static _Thread_local size_t tl_size;

static float *thread_scratch(size_t bytes) {
  if (tl_size >= bytes) return tl_buf;
  free(tl_buf);
  tl_buf = malloc(bytes);
  tl_size = tl_buf ? bytes : 0;
  return tl_buf;
}

static void fwd_chunk(int64_t k, void *ctx) {
  const wino_job *j = ctx;
  int64_t N = j->N, T = j->th * j->tw;
  int64_t n0 = k * j->ns, ns = N - n0 < j->ns ? N - n0 : j->ns;
  float *buf = thread_scratch(sizeof(float) * (size_t)(16 * (j->Ci + j->Co) * ns * T));
  if (!buf) { atomic_store((atomic_bool *)&j->oom, true); return; }
  wino_job c = *j;
  c.n0 = n0;
  c.Tc = ns * T;
  c.V = buf;
  c.M = buf + 16 * j->Ci * c.Tc;
  input_tf(0, ns * j->Ci, &c);
  for (int64_t xi = 0; xi < 16; xi++) product_fwd(xi, &c);
  output_tf(0, ns * j->Co, &c);
}

gs_status gs_cpu_conv3x3_wino(gs_tensor *y, const gs_tensor *x, const gs_tensor *w, const gs_tensor *b, int64_t ph,
                              int64_t pw, bool flip) {
  wino_job j = {0};
  int64_t N = x->shape[0];
  j.x = (const float *)gs_tensor_ptr(x); j.w = (const float *)gs_tensor_ptr(w);
  j.b = b ? (const float *)gs_tensor_ptr(b) : NULL; j.y = (float *)gs_tensor_ptr(y);
  j.Ci = x->shape[1]; j.H = x->shape[2]; j.W = x->shape[3];
  j.Co = y->shape[1]; j.oh = y->shape[2]; j.ow = y->shape[3];
  j.ph = ph; j.pw = pw; j.flip = flip;
  if (N == 0 || j.Co == 0 || j.oh == 0 || j.ow == 0) return GS_OK;
  float *buf = NULL;
  size_t bytes = 0;
  GS_TRY(setup(&j, N, 1, &buf, &bytes));
  int64_t T = j.th * j.tw;
  gs_status s = gs_parallel_for(j.Co, j.Co * j.Ci * TF_COST, weight_tf, &j);
  /* whole chunks per thread when there are enough of them to share */
  int64_t per = 16 * (j.Ci + j.Co) * T * (int64_t)sizeof(float);
  int64_t nt = (int64_t)(WINO_THREAD_BYTES / (size_t)per);
  if (nt < 1) nt = 1;
  int64_t chunks = (N + nt - 1) / nt;
  if (s == GS_OK && gs_num_threads() > 1 && chunks >= 4 * gs_num_threads()) {
    wino_job c = j;
    c.N = N;
    c.ns = nt;
    s = gs_parallel_run(chunks, fwd_chunk, &c);
    if (s == GS_OK && atomic_load(&c.oom)) s = oom();
    scratch_put(buf, bytes);
    return s;
  }
  for (int64_t n0 = 0; s == GS_OK && n0 < N; n0 += j.ns) {
    int64_t ns = N - n0 < j.ns ? N - n0 : j.ns;
    wino_job c = j;
    c.n0 = n0;
    c.Tc = ns * T;
    s = gs_parallel_for(ns * j.Ci, ns * j.Ci * T * TF_COST, input_tf, &c);
    if (s == GS_OK) s = gs_parallel_run(16, product_fwd, &c);
    if (s == GS_OK) s = gs_parallel_for(ns * j.Co, ns * j.Co * T * TF_COST, output_tf, &c);
  }
  scratch_put(buf, bytes);
  return s;
}

/* The weight gradient's parts (see gs_cpu_conv3x3_wino_gw); only for
 * Co * Ci up to 128 * 128, where the 8 partial sums take 8 MiB at most. */
#define GW_PARTS 8
#define GW_PART_MAX (128 * 128)

static void gw_part(int64_t part, void *ctx) {
  const wino_job *j = ctx;
  int64_t T = j->th * j->tw, a = j->N * part / j->parts, b = j->N * (part + 1) / j->parts;
  float *dU = j->U + part * 16 * j->Co * j->Ci;
  if (a == b) { memset(dU, 0, sizeof(float) * (size_t)(16 * j->Co * j->Ci)); return; }
  float *buf = thread_scratch(sizeof(float) * (size_t)(16 * (j->Ci + j->Co) * j->ns * T));
  if (!buf) { atomic_store((atomic_bool *)&j->oom, true); return; }
  for (int64_t n0 = a; n0 < b; n0 += j->ns) {
    int64_t ns = b - n0 < j->ns ? b - n0 : j->ns;
    wino_job c = *j;
    c.n0 = n0;
    c.Tc = ns * T;
    c.V = buf;
    c.M = buf + 16 * j->Ci * c.Tc;
    c.U = dU;
    c.accumulate = n0 > a;
    input_tf(0, ns * j->Ci, &c);
    grad_out_tf(0, ns * j->Co, &c);
    for (int64_t xi = 0; xi < 16; xi++) product_gw(xi, &c);
  }
}

gs_status gs_cpu_conv3x3_wino_gw(gs_tensor *gw, const gs_tensor *x, const gs_tensor *gy, int64_t ph, int64_t pw) {
  wino_job j = {0};
  int64_t N = x->shape[0];
  j.x = (const float *)gs_tensor_ptr(x); j.gy = (const float *)gs_tensor_ptr(gy);
  j.y = (float *)gs_tensor_ptr(gw);
  j.Ci = x->shape[1]; j.H = x->shape[2]; j.W = x->shape[3];
  j.Co = gy->shape[1]; j.oh = gy->shape[2]; j.ow = gy->shape[3];
  j.ph = ph; j.pw = pw;
  if (j.Co == 0 || j.Ci == 0) return GS_OK;
  float *buf = NULL;
  size_t bytes = 0;
  /* whole chunks per part, as the forward pass, when the partial sums are
   * small: a fixed number of parts whatever the thread count, each
   * summing its samples' products in its own dU, then added in part
   * order, so the result does not depend on the threads either */
  int64_t th = (j.oh + 1) / 2, tw = (j.ow + 1) / 2, T0 = th * tw;
  int64_t per = 16 * (j.Ci + j.Co) * T0 * (int64_t)sizeof(float);
  int64_t nt = per > 0 ? (int64_t)(WINO_THREAD_BYTES / (size_t)per) : 1;
  if (nt < 1) nt = 1;
  bool by_parts = gs_num_threads() > 1 && T0 > 0 && j.Co * j.Ci <= GW_PART_MAX && N >= GW_PARTS * nt;
  GS_TRY(setup(&j, N > 0 ? N : 1, by_parts ? GW_PARTS : 1, &buf, &bytes));
  int64_t T = j.th * j.tw;
  gs_status s = GS_OK;
  if (by_parts) {
    wino_job c = j;
    c.N = N;
    c.ns = nt;
    c.parts = GW_PARTS;
    s = gs_parallel_run(GW_PARTS, gw_part, &c);
    if (s == GS_OK && atomic_load(&c.oom)) s = oom();
    if (s == GS_OK) s = gs_parallel_for(j.Co * j.Ci, j.Co * j.Ci * TF_COST * GW_PARTS, weight_grad_tf, &c);
    scratch_put(buf, bytes);
    return s;
  }
  if (N == 0 || T == 0) memset(j.U, 0, sizeof(float) * (size_t)(16 * j.Co * j.Ci));
  for (int64_t n0 = 0; s == GS_OK && n0 < N && T > 0; n0 += j.ns) {
    int64_t ns = N - n0 < j.ns ? N - n0 : j.ns;
    wino_job c = j;
    c.n0 = n0;
    c.Tc = ns * T;
    c.accumulate = n0 > 0;
    s = gs_parallel_for(ns * j.Ci, ns * j.Ci * T * TF_COST, input_tf, &c);
    if (s == GS_OK) s = gs_parallel_for(ns * j.Co, ns * j.Co * T * TF_COST, grad_out_tf, &c);
    if (s == GS_OK) s = gs_parallel_run(16, product_gw, &c);
  }
  if (s == GS_OK) s = gs_parallel_for(j.Co * j.Ci, j.Co * j.Ci * TF_COST, weight_grad_tf, &j);
  scratch_put(buf, bytes);
  return s;
}
