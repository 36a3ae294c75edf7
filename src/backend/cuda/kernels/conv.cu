/* conv.cu: the convolution's data movement on a GPU (gs_backend.h's
 * im2col and col2im slots; the products go through cuBLAS, cuda_blas.c).
 * Both are one thread per element written, queued on the device's
 * stream:
 *   im2col: one thread per column entry, reading its input pixel or 0;
 *   col2im: one thread per input element, gathering the column entries
 *           that read it in (kernel row, kernel column) order -- the order
 *           cpu_conv.c adds them in -- so there are no atomics and every
 *           run gives the same sums. */
#include "backend/cuda/kernels/common.cuh"

/* col [C*kh*kw, N, oh*ow] from x [N, C, H, W], both contiguous. */
template <typename T>
__global__ void im2col_kernel(T *__restrict__ col, const T *__restrict__ x, int64_t N, int64_t C, int64_t H,
                              int64_t W, gs_conv_geom g, int64_t total) {
  GS_GRID_LOOP(e, total) {
    int64_t ox = e % g.ow, t = e / g.ow;
    int64_t oy = t % g.oh;
    t /= g.oh;
    int64_t n = t % N, row = t / N; /* row = (c*kh + i)*kw + j */
    int64_t j = row % g.kw, i = row / g.kw % g.kh, c = row / (g.kw * g.kh);
    int64_t iy = oy * g.sh - g.ph + i * g.dh, ix = ox * g.sw - g.pw + j * g.dw;
    T v = T(0);
    if (iy >= 0 && iy < H && ix >= 0 && ix < W) v = x[((n * C + c) * H + iy) * W + ix];
    col[e] = v;
  }
}

/* x [N, C, H, W] = the sum of the col entries that read each element. */
template <typename T>
__global__ void col2im_kernel(T *__restrict__ x, const T *__restrict__ col, int64_t N, int64_t C, int64_t H,
                              int64_t W, gs_conv_geom g, int64_t total) {
  int64_t L = g.oh * g.ow;
  GS_GRID_LOOP(e, total) {
    int64_t ix = e % W, t = e / W;
    int64_t iy = t % H;
    t /= H;
    int64_t c = t % C, n = t / C;
    T sum = T(0);
    for (int64_t i = 0; i < g.kh; i++) {
      /* the output row oy with oy*sh - ph + i*dh == iy, if any */
      int64_t ry = iy + g.ph - i * g.dh;
      if (ry < 0 || ry % g.sh != 0) continue;
      int64_t oy = ry / g.sh;
      if (oy >= g.oh) continue;
      for (int64_t j = 0; j < g.kw; j++) {
        int64_t rx = ix + g.pw - j * g.dw;
        if (rx < 0 || rx % g.sw != 0) continue;
        int64_t ox = rx / g.sw;
        if (ox >= g.ow) continue;
        int64_t row = (c * g.kh + i) * g.kw + j;
        sum += col[(row * N + n) * L + oy * g.ow + ox];
      }
    }
    x[e] = sum;
  }
}

extern "C" gs_status gs_cuda_im2col(gs_tensor *col, const gs_tensor *x, const gs_conv_geom *g) {
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  int64_t total = C * g->kh * g->kw * N * g->oh * g->ow;
  if (total == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  if (x->dtype == GS_FLOAT64)
    im2col_kernel<double><<<gs_grid(total), GS_BLOCK, 0, st>>>((double *)gs_tensor_ptr(col),
                                                              (const double *)gs_tensor_ptr(x), N, C, H, W, *g, total);
  else
    im2col_kernel<float><<<gs_grid(total), GS_BLOCK, 0, st>>>((float *)gs_tensor_ptr(col),
                                                             (const float *)gs_tensor_ptr(x), N, C, H, W, *g, total);
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

extern "C" gs_status gs_cuda_col2im(gs_tensor *x, const gs_tensor *col, const gs_conv_geom *g) {
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  int64_t total = N * C * H * W;
  if (total == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  if (x->dtype == GS_FLOAT64)
    col2im_kernel<double><<<gs_grid(total), GS_BLOCK, 0, st>>>((double *)gs_tensor_ptr(x),
                                                              (const double *)gs_tensor_ptr(col), N, C, H, W, *g, total);
  else
    col2im_kernel<float><<<gs_grid(total), GS_BLOCK, 0, st>>>((float *)gs_tensor_ptr(x),
                                                             (const float *)gs_tensor_ptr(col), N, C, H, W, *g, total);
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}
