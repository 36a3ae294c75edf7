/* gs_image.c: bilinear resize of CPU images (gs_image.h). The source
 * positions and weights of every output column and row are computed once
 * (they are the same for every image of a batch), then each output pixel
 * blends its four source pixels. The arithmetic is PyTorch's (1.13, on
 * x86-64 with AVX2), found by matching its results bit for bit. Both of
 * its kernels take the scale in/out in float, source positions in double
 * and weights rounded to float; then
 *   - one-channel images (the data sets' gray images) go through its
 *     channels-last kernel: the four weight products in float, their sum
 *     with the pixels in double;
 *   - images of several channels go through its generic kernel: a blend
 *     along the width, then along the height, each a*wa + b*wb with the
 *     first product fused (fmaf), as the compiler contracts it.
 * float64 images use double throughout. Rows are spread over the CPU's
 * worker threads. */
#include "io/gs_image.h"
#include <math.h>
#include <stdlib.h>
#include "core/gs_parallel.h"
#include "ops/gs_ops.h"

typedef struct {
  int64_t i0, i1; /* source indices */
  double w0, w1;  /* their weights (float values for float32 work) */
} tap;

/* align_corners=False: src = scale (dst + 0.5) - 0.5, clamped to 0 below;
 * the second tap is the next pixel unless at the edge. */
static void taps(int64_t in, int64_t out, bool single, tap *t) {
  for (int64_t d = 0; d < out; d++) {
    double scale = single ? (double)((float)in / (float)out) : (double)in / (double)out;
    double s = scale * ((double)d + 0.5) - 0.5;
    if (s < 0) s = 0;
    int64_t i = (int64_t)s;
    if (i > in - 1) i = in - 1;
    double l1 = s - (double)i;
    if (l1 > 1) l1 = 1;
    t[d].i0 = i;
    t[d].i1 = i < in - 1 ? i + 1 : i;
    if (single) {
      float f1 = (float)l1;
      t[d].w1 = f1;
      t[d].w0 = 1.0f - f1;
    } else {
      t[d].w1 = l1;
      t[d].w0 = 1.0 - l1;
    }
  }
}

typedef struct {
  const void *src;
  void *dst;
  gs_dtype dt;
  int64_t ih, iw, oh, ow;
  const tap *th, *tw;
  bool generic; /* several channels: PyTorch's generic kernel */
} job;

/* One output row of each dtype; T: the pixel type, W: the weights' type
 * (float for uint8 and float32 images, as PyTorch's kernels), STORE: how
 * the value v becomes an output pixel. */
#define RESIZE_ROW(NAME, T, W, STORE)                                                          \
  static void NAME(const job *j, int64_t a, int64_t b, const tap *h, void *dst) {              \
    const T *s = j->src;                                                                       \
    T *d = dst;                                                                                \
    W hw0 = (W)h->w0, hw1 = (W)h->w1;                                                          \
    for (int64_t x = 0; x < j->ow; x++) {                                                      \
      const tap *w = &j->tw[x];                                                                \
      W ww0 = (W)w->w0, ww1 = (W)w->w1;                                                        \
      double w00 = hw0 * ww0, w01 = hw0 * ww1, w10 = hw1 * ww0, w11 = hw1 * ww1;               \
      double v = (double)s[a + w->i0] * w00 + (double)s[a + w->i1] * w01 +                     \
                 (double)s[b + w->i0] * w10 + (double)s[b + w->i1] * w11;                      \
      STORE;                                                                                   \
    }                                                                                          \
  }
/* The generic kernel's row (float work for uint8 and float32 pixels). */
#define RESIZE_ROW_GENERIC(NAME, T, STORE)                                                     \
  static void NAME(const job *j, int64_t a, int64_t b, const tap *h, void *dst) {              \
    const T *s = j->src;                                                                       \
    T *d = dst;                                                                                \
    float hw0 = (float)h->w0, hw1 = (float)h->w1;                                              \
    for (int64_t x = 0; x < j->ow; x++) {                                                      \
      const tap *w = &j->tw[x];                                                                \
      float ww0 = (float)w->w0, ww1 = (float)w->w1;                                            \
      float t0 = fmaf((float)s[a + w->i0], ww0, (float)s[a + w->i1] * ww1);                    \
      float t1 = fmaf((float)s[b + w->i0], ww0, (float)s[b + w->i1] * ww1);                    \
      float v = fmaf(t0, hw0, t1 * hw1);                                                       \
      STORE;                                                                                   \
    }                                                                                          \
  }
/* uint8: the float32 result rounded half to even (torch.round), then cast */
#define STORE_U8 float f = nearbyintf((float)v); d[x] = (uint8_t)(f < 0 ? 0 : f > 255 ? 255 : f)
RESIZE_ROW(row_f64, double, double, d[x] = v)
RESIZE_ROW(row_f32, float, float, d[x] = (float)v)
RESIZE_ROW(row_u8, uint8_t, float, STORE_U8)
RESIZE_ROW_GENERIC(row_f32_generic, float, d[x] = v)
RESIZE_ROW_GENERIC(row_u8_generic, uint8_t, STORE_U8)

/* Output rows [begin, end) over all planes: row r is line r % oh of
 * plane r / oh. */
static void rows(int64_t begin, int64_t end, void *ctx) {
  const job *j = ctx;
  size_t isz = gs_dtype_size(j->dt);
  for (int64_t r = begin; r < end; r++) {
    int64_t plane = r / j->oh, y = r % j->oh;
    const tap *h = &j->th[y];
    int64_t a = (plane * j->ih + h->i0) * j->iw, b = (plane * j->ih + h->i1) * j->iw;
    char *dst = (char *)j->dst + (size_t)(r * j->ow) * isz;
    if (j->dt == GS_FLOAT64) row_f64(j, a, b, h, dst);
    else if (j->dt == GS_FLOAT32) (j->generic ? row_f32_generic : row_f32)(j, a, b, h, dst);
    else (j->generic ? row_u8_generic : row_u8)(j, a, b, h, dst);
  }
}

gs_status gs_resize_bilinear(const gs_tensor *x, int64_t oh, int64_t ow, int64_t channels, gs_tensor **out) {
  if (!gs_tensor_on_cpu(x))
    return gs_error("resize: expected a CPU tensor (data transforms run on the host), got one on a device");
  if (x->dtype != GS_UINT8 && x->dtype != GS_FLOAT32 && x->dtype != GS_FLOAT64)
    return gs_error("resize: expected a uint8, float32 or float64 image, got %s", gs_dtype_name(x->dtype));
  if (x->ndim < 2) return gs_error("resize: expected an image with at least 2 dims (..., H, W), got %d", x->ndim);
  if (oh < 1 || ow < 1 || oh > (1 << 20) || ow > (1 << 20))
    return gs_error("resize: the output size must be 1 to 1048576 pixels per side, got %lld x %lld",
                    (long long)oh, (long long)ow);
  int64_t ih = x->shape[x->ndim - 2], iw = x->shape[x->ndim - 1];
  if (ih < 1 || iw < 1)
    return gs_error("resize: the input image is empty (%lld x %lld)", (long long)ih, (long long)iw);
  int64_t shape[GS_MAX_DIMS], planes = 1;
  for (int d = 0; d < x->ndim - 2; d++) shape[d] = x->shape[d], planes *= x->shape[d];
  shape[x->ndim - 2] = oh;
  shape[x->ndim - 1] = ow;
  gs_tensor *c, *y;
  GS_TRY(gs_contiguous(x, &c));
  gs_status s = gs_tensor_host_wait(c, "resize");
  if (s != GS_OK) { gs_tensor_release(c); return s; }
  s = gs_tensor_empty(gs_cpu(), x->dtype, x->ndim, shape, &y);
  if (s != GS_OK) { gs_tensor_release(c); return s; }
  tap *th = malloc(sizeof *th * (size_t)oh), *tw = malloc(sizeof *tw * (size_t)ow);
  if (!th || !tw) {
    free(th), free(tw);
    gs_tensor_release(c), gs_tensor_release(y);
    return gs_error_code(GS_ERR_OOM, "resize: out of memory");
  }
  bool single = x->dtype != GS_FLOAT64;
  taps(ih, oh, single, th);
  taps(iw, ow, single, tw);
  job j = {gs_tensor_ptr(c), gs_tensor_ptr(y), x->dtype, ih, iw, oh, ow, th, tw, channels > 1};
  if (planes * oh > 0) s = gs_parallel_for(planes * oh, planes * oh * ow * 8, rows, &j);
  free(th), free(tw);
  gs_tensor_release(c);
  if (s != GS_OK) { gs_tensor_release(y); return s; }
  *out = y;
  return GS_OK;
}
