/* pool.cu: 2-d pooling (max, average, adaptive) and resizing (nearest,
 * bilinear) for contiguous float32/float64 planes [planes, h, w], forward
 * and backward -- the CUDA versions of cpu_pool.c with the same window
 * arithmetic (contracts in gs_backend.h).
 *
 * Forward: one thread per output element. Backward: one thread per INPUT
 * element, which gathers from the few outputs whose window (or blend)
 * can reach it, in a fixed order: no atomics, so gradients are the same
 * on every run. A max pool's input cell takes the gradient of exactly the
 * outputs whose saved argmax is that cell.
 *
 * spec/support/pool_cu_host.cpp compiles the window arithmetic and the
 * kernels of this file as host code (GS_HOST_EMULATION: no launches) and
 * checks each gathering backward pass against a plain scatter, so the
 * gathers are tested on machines without a GPU. */
#ifndef GS_HOST_EMULATION
#include "backend/cuda/kernels/common.cuh"
#endif

/* ---- pooling windows (as cpu_pool.c's pool_rows / pool_divisor) ---- */

struct axis {
  int64_t size, out;
  int k, s, pad, d;
};

__device__ __forceinline__ axis rows_of(const gs_pool2d_params &p) { return {p.h, p.oh, p.kh, p.sh, p.ph, p.dh}; }
__device__ __forceinline__ axis cols_of(const gs_pool2d_params &p) { return {p.w, p.ow, p.kw, p.sw, p.pw, p.dw}; }

/* The window of output i along one axis: cells [a, b) stepping step. */
__device__ __forceinline__ void window(int kind, const axis &x, int64_t i, int64_t &a, int64_t &b, int64_t &step) {
  step = 1;
  if (kind == GS_POOL_MAX) {
    int64_t start = i * x.s - x.pad, end = start + (int64_t)(x.k - 1) * x.d + 1;
    while (start < 0) start += x.d;
    a = start;
    b = end < x.size ? end : x.size;
    step = x.d;
  } else if (kind == GS_POOL_AVG) {
    int64_t start = i * x.s - x.pad, end = start + x.k;
    if (end > x.size + x.pad) end = x.size + x.pad;
    a = start < 0 ? 0 : start;
    b = end < x.size ? end : x.size;
  } else {
    a = i * x.size / x.out;
    b = ((i + 1) * x.size + x.out - 1) / x.out;
  }
}

/* The cells an average over window (i, j) divides by. */
__device__ __forceinline__ int64_t divisor(const gs_pool2d_params &p, int64_t i, int64_t j) {
  int64_t y0, y1, x0, x1, st;
  window(p.kind, rows_of(p), i, y0, y1, st);
  window(p.kind, cols_of(p), j, x0, x1, st);
  if (p.kind == GS_POOL_AVG && p.count_include_pad) {
    int64_t ys = i * p.sh - p.ph, ye = ys + p.kh, xs = j * p.sw - p.pw, xe = xs + p.kw;
    if (ye > p.h + p.ph) ye = p.h + p.ph;
    if (xe > p.w + p.pw) xe = p.w + p.pw;
    return (ye - ys) * (xe - xs);
  }
  return (y1 - y0) * (x1 - x0);
}

/* The outputs [lo, hi] along one axis whose window can contain cell y. */
__device__ __forceinline__ void reaching(int kind, const axis &x, int64_t y, int64_t &lo, int64_t &hi) {
  if (kind == GS_POOL_ADAPTIVE_MAX || kind == GS_POOL_ADAPTIVE_AVG) {
    /* start(o) <= y < end(o)  <=>  floor(y*out/size) <= o < ceil((y+1)*out/size) */
    lo = y * x.out / x.size;
    hi = ((y + 1) * x.out + x.size - 1) / x.size - 1;
  } else {
    int64_t span = kind == GS_POOL_MAX ? (int64_t)(x.k - 1) * x.d : x.k - 1;
    int64_t num = y + x.pad - span; /* o * s >= num */
    lo = num <= 0 ? 0 : (num + x.s - 1) / x.s;
    hi = (y + x.pad) / x.s;
  }
  if (lo < 0) lo = 0;
  if (hi > x.out - 1) hi = x.out - 1;
}

template <typename T>
__global__ void pool_fwd(gs_pool2d_params p, T *out, int64_t *argmax, const T *x, int64_t n) {
  GS_GRID_LOOP(e, n) {
    int64_t j = e % p.ow, i = (e / p.ow) % p.oh, pl = e / (p.ow * p.oh);
    const T *xp = x + pl * p.h * p.w;
    int64_t y0, y1, dy, x0, x1, dx;
    window(p.kind, rows_of(p), i, y0, y1, dy);
    window(p.kind, cols_of(p), j, x0, x1, dx);
    if (p.kind == GS_POOL_MAX || p.kind == GS_POOL_ADAPTIVE_MAX) { /* padding never wins; ties keep the first; NaN wins */
      T best = -INFINITY;
      int64_t at = y0 < y1 && x0 < x1 ? y0 * p.w + x0 : -1; /* -1: a window that misses the plane */
      for (int64_t y = y0; y < y1; y += dy)
        for (int64_t c = x0; c < x1; c += dx) {
          T v = xp[y * p.w + c];
          if (v > best || v != v) { best = v; at = y * p.w + c; }
        }
      out[e] = best;
      if (argmax) argmax[e] = at;
    } else {
      double sum = 0;
      for (int64_t y = y0; y < y1; y++)
        for (int64_t c = x0; c < x1; c++) sum += (double)xp[y * p.w + c];
      out[e] = (T)(sum / (double)divisor(p, i, j));
    }
  }
}

template <typename T>
__global__ void pool_bwd(gs_pool2d_params p, T *gx, const T *gy, const int64_t *argmax, int64_t n) {
  GS_GRID_LOOP(e, n) {
    int64_t c = e % p.w, y = (e / p.w) % p.h, pl = e / (p.w * p.h);
    const T *g = gy + pl * p.oh * p.ow;
    int64_t ilo, ihi, jlo, jhi;
    reaching(p.kind, rows_of(p), y, ilo, ihi);
    reaching(p.kind, cols_of(p), c, jlo, jhi);
    T acc = 0;
    if (argmax) {
      const int64_t *ap = argmax + pl * p.oh * p.ow, me = y * p.w + c;
      for (int64_t i = ilo; i <= ihi; i++)
        for (int64_t j = jlo; j <= jhi; j++)
          if (ap[i * p.ow + j] == me) acc += g[i * p.ow + j];
    } else {
      for (int64_t i = ilo; i <= ihi; i++)
        for (int64_t j = jlo; j <= jhi; j++) {
          int64_t y0, y1, x0, x1, st;
          window(p.kind, rows_of(p), i, y0, y1, st);
          window(p.kind, cols_of(p), j, x0, x1, st);
          if (y < y0 || y >= y1 || c < x0 || c >= x1) continue;
          acc += (T)(g[i * p.ow + j] / (T)divisor(p, i, j));
        }
    }
    gx[e] = acc;
  }
}

#ifndef GS_HOST_EMULATION
template <typename T>
static gs_status launch_pool(cudaStream_t st, const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax,
                             const gs_tensor *x) {
  int64_t n = p->planes * p->oh * p->ow;
  pool_fwd<T><<<gs_grid(n), GS_BLOCK, 0, st>>>(*p, (T *)gs_tensor_ptr(out),
                                              argmax ? (int64_t *)gs_tensor_ptr(argmax) : NULL,
                                              (const T *)gs_tensor_ptr(x), n);
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

template <typename T>
static gs_status launch_pool_bwd(cudaStream_t st, const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                                 const gs_tensor *argmax) {
  int64_t n = p->planes * p->h * p->w;
  pool_bwd<T><<<gs_grid(n), GS_BLOCK, 0, st>>>(*p, (T *)gs_tensor_ptr(gx), (const T *)gs_tensor_ptr(gy),
                                              argmax ? (const int64_t *)gs_tensor_ptr(argmax) : NULL, n);
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

extern "C" gs_status gs_cuda_pool2d(const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax, const gs_tensor *x) {
  if (p->planes * p->oh * p->ow == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  if (x->dtype == GS_FLOAT32) return launch_pool<float>(st, p, out, argmax, x);
  if (x->dtype == GS_FLOAT64) return launch_pool<double>(st, p, out, argmax, x);
  return gs_error("pool2d: no CUDA kernel for %s", gs_dtype_name(x->dtype));
}

extern "C" gs_status gs_cuda_pool2d_backward(const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                                             const gs_tensor *argmax) {
  if (p->planes * p->h * p->w == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(gy, &st));
  if (gy->dtype == GS_FLOAT32) return launch_pool_bwd<float>(st, p, gx, gy, argmax);
  if (gy->dtype == GS_FLOAT64) return launch_pool_bwd<double>(st, p, gx, gy, argmax);
  return gs_error("pool2d_backward: no CUDA kernel for %s", gs_dtype_name(gy->dtype));
}

#endif /* GS_HOST_EMULATION */

/* ---- resizing (as cpu_pool_impl.h's resize_axis) ---- */

/* Output o's source cells i0, i1 along an axis of `in` cells resized to
 * `out`, and the weight l1 of i1 (nearest: i1 = i0, l1 = 0). */
template <typename T>
__device__ __forceinline__ void source(const gs_resize_params &p, int64_t o, int64_t in, int64_t out, double user,
                                       int64_t &i0, int64_t &i1, T &l1) {
  if (p.mode == GS_RESIZE_NEAREST) {
    float scale = user > 0 ? (float)(1.0 / user) : (float)in / (float)out;
    int64_t s = out == in ? o : out == 2 * in ? o >> 1 : (int64_t)floorf((float)o * scale);
    i0 = i1 = s < in - 1 ? s : in - 1;
    l1 = 0;
    return;
  }
  T scale = p.align_corners ? (out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0)
                            : user > 0 ? (T)(1.0 / user) : (T)in / (T)out;
  T src = p.align_corners ? scale * (T)o : scale * ((T)o + (T)0.5) - (T)0.5;
  if (src < 0) src = 0;
  int64_t a = (int64_t)src;
  i0 = a;
  i1 = a + (a < in - 1 ? 1 : 0);
  T l = src - (T)a;
  l1 = l < 0 ? (T)0 : l > 1 ? (T)1 : l;
}

template <typename T>
__global__ void resize_fwd(gs_resize_params p, T *out, const T *x, int64_t n) {
  GS_GRID_LOOP(e, n) {
    int64_t j = e % p.ow, i = (e / p.ow) % p.oh, pl = e / (p.ow * p.oh);
    const T *xp = x + pl * p.h * p.w;
    int64_t r0, r1, c0, c1;
    T rl, cl;
    source<T>(p, i, p.h, p.oh, p.scale_h, r0, r1, rl);
    source<T>(p, j, p.w, p.ow, p.scale_w, c0, c1, cl);
    if (p.mode == GS_RESIZE_NEAREST) {
      out[e] = xp[r0 * p.w + c0];
    } else {
      T h0 = 1 - rl, w0 = 1 - cl;
      out[e] = h0 * (w0 * xp[r0 * p.w + c0] + cl * xp[r0 * p.w + c1]) +
               rl * (w0 * xp[r1 * p.w + c0] + cl * xp[r1 * p.w + c1]);
    }
  }
}

/* The outputs [lo, hi] along an axis that may read cell y: a bound from
 * the inverse of the source map, widened by one each way; the kernel
 * recomputes each candidate's cells exactly, so the margin only costs
 * a few skipped candidates. */
__device__ __forceinline__ void candidates(const gs_resize_params &p, int64_t y, int64_t in, int64_t out, double user,
                                           int64_t &lo, int64_t &hi) {
  double step = p.mode == GS_RESIZE_NEAREST || !p.align_corners
                  ? (user > 0 ? 1.0 / user : (double)in / (double)out)
                  : (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0);
  if (step <= 0) { lo = 0; hi = out - 1; return; }
  double a, b; /* the source positions [y - 1, y + 1] mapped back to outputs */
  if (p.mode == GS_RESIZE_NEAREST) { a = (double)y / step; b = (double)(y + 1) / step; }
  else if (p.align_corners) { a = (double)(y - 1) / step; b = (double)(y + 1) / step; }
  else { a = ((double)(y - 1) + 0.5) / step - 0.5; b = ((double)(y + 1) + 0.5) / step - 0.5; }
  lo = (int64_t)floor(a) - 1;
  hi = (int64_t)ceil(b) + 1;
  if (lo < 0) lo = 0;
  if (hi > out - 1) hi = out - 1;
}

template <typename T>
__global__ void resize_bwd(gs_resize_params p, T *gx, const T *gy, int64_t n) {
  GS_GRID_LOOP(e, n) {
    int64_t c = e % p.w, y = (e / p.w) % p.h, pl = e / (p.w * p.h);
    const T *g = gy + pl * p.oh * p.ow;
    int64_t ilo, ihi, jlo, jhi;
    candidates(p, y, p.h, p.oh, p.scale_h, ilo, ihi);
    candidates(p, c, p.w, p.ow, p.scale_w, jlo, jhi);
    /* a cell's share of an output: 1 - l1 as its i0, l1 as its i1, both
     * at the edge (nearest: i1 = i0 and l1 = 0, so 1 exactly) */
    T acc = 0;
    for (int64_t i = ilo; i <= ihi; i++) {
      int64_t r0, r1;
      T rl;
      source<T>(p, i, p.h, p.oh, p.scale_h, r0, r1, rl);
      if (r0 != y && r1 != y) continue;
      T wr = (r0 == y ? 1 - rl : (T)0) + (r1 == y ? rl : (T)0);
      for (int64_t j = jlo; j <= jhi; j++) {
        int64_t c0, c1;
        T cl;
        source<T>(p, j, p.w, p.ow, p.scale_w, c0, c1, cl);
        if (c0 != c && c1 != c) continue;
        T wc = (c0 == c ? 1 - cl : (T)0) + (c1 == c ? cl : (T)0);
        acc += wr * wc * g[i * p.ow + j];
      }
    }
    gx[e] = acc;
  }
}

#ifndef GS_HOST_EMULATION
template <typename T>
static gs_status launch_resize(cudaStream_t st, const gs_resize_params *p, gs_tensor *out, const gs_tensor *x,
                               bool backward) {
  if (backward) {
    int64_t n = p->planes * p->h * p->w;
    resize_bwd<T><<<gs_grid(n), GS_BLOCK, 0, st>>>(*p, (T *)gs_tensor_ptr(out), (const T *)gs_tensor_ptr(x), n);
  } else {
    int64_t n = p->planes * p->oh * p->ow;
    resize_fwd<T><<<gs_grid(n), GS_BLOCK, 0, st>>>(*p, (T *)gs_tensor_ptr(out), (const T *)gs_tensor_ptr(x), n);
  }
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

static gs_status resize_any(const gs_resize_params *p, gs_tensor *out, const gs_tensor *in, bool backward) {
  if (p->planes == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(in, &st));
  if (in->dtype == GS_FLOAT32) return launch_resize<float>(st, p, out, in, backward);
  if (in->dtype == GS_FLOAT64) return launch_resize<double>(st, p, out, in, backward);
  return gs_error("resize: no CUDA kernel for %s", gs_dtype_name(in->dtype));
}

extern "C" gs_status gs_cuda_resize(const gs_resize_params *p, gs_tensor *out, const gs_tensor *x) {
  return resize_any(p, out, x, false);
}

extern "C" gs_status gs_cuda_resize_backward(const gs_resize_params *p, gs_tensor *gx, const gs_tensor *gy) {
  return resize_any(p, gx, gy, true);
}
#endif /* GS_HOST_EMULATION */
