/* gs_image.c: bilinear resize of CPU images (gs_image.h). The source
 * positions and weights of every output column and row are computed once
 * (they are the same for every image of a batch), then each output row is
 * two interpolations along the width blended along the height, in the
 * order PyTorch's CPU kernel uses, so float32 results match it bit for
 * bit. Rows are spread over the CPU's worker threads. */
#include "io/gs_image.h"
#include <math.h>
#include <stdlib.h>
#include "core/gs_parallel.h"
#include "ops/gs_ops.h"

typedef struct {
  int64_t i0, i1; /* source indices */
  double w0, w1;  /* their weights (rounded to float for float32 work) */
} tap;

/* PyTorch's area_pixel_compute_source_index for align_corners=False:
 * scale = in / out in the working precision, src = scale (dst + 0.5) - 0.5,
 * clamped to 0 below; the second tap is the next pixel unless at the edge. */
static void taps(int64_t in, int64_t out, bool single, tap *t) {
  for (int64_t d = 0; d < out; d++) {
    if (single) {
      float scale = (float)in / (float)out;
      float s = scale * ((float)d + 0.5f) - 0.5f;
      if (s < 0) s = 0;
      t[d].i0 = (int64_t)s;
      float l1 = s - (float)t[d].i0;
      t[d].w1 = l1;
      t[d].w0 = 1.0f - l1;
    } else {
      double scale = (double)in / (double)out;
      double s = scale * ((double)d + 0.5) - 0.5;
      if (s < 0) s = 0;
      t[d].i0 = (int64_t)s;
      t[d].w1 = s - (double)t[d].i0;
      t[d].w0 = 1.0 - t[d].w1;
    }
    if (t[d].i0 > in - 1) t[d].i0 = in - 1;
    t[d].i1 = t[d].i0 < in - 1 ? t[d].i0 + 1 : t[d].i0;
  }
}

typedef struct {
  const void *src;
  void *dst;
  gs_dtype dt;
  int64_t ih, iw, oh, ow;
  const tap *th, *tw;
} job;

/* One output row r (over all planes: row r is plane r / oh, line r % oh). */
static void rows(int64_t begin, int64_t end, void *ctx) {
  const job *j = ctx;
  for (int64_t r = begin; r < end; r++) {
    int64_t plane = r / j->oh, y = r % j->oh;
    const tap *h = &j->th[y];
    int64_t a = (plane * j->ih + h->i0) * j->iw, b = (plane * j->ih + h->i1) * j->iw;
    int64_t o = r * j->ow;
    if (j->dt == GS_FLOAT64) {
      const double *s = j->src;
      double *d = j->dst;
      for (int64_t x = 0; x < j->ow; x++) {
        const tap *w = &j->tw[x];
        double t0 = s[a + w->i0] * w->w0 + s[a + w->i1] * w->w1;
        double t1 = s[b + w->i0] * w->w0 + s[b + w->i1] * w->w1;
        d[o + x] = t0 * h->w0 + t1 * h->w1;
      }
    } else if (j->dt == GS_FLOAT32) {
      const float *s = j->src;
      float *d = j->dst;
      float hw0 = (float)h->w0, hw1 = (float)h->w1;
      for (int64_t x = 0; x < j->ow; x++) {
        const tap *w = &j->tw[x];
        float w0 = (float)w->w0, w1 = (float)w->w1;
        float t0 = s[a + w->i0] * w0 + s[a + w->i1] * w1;
        float t1 = s[b + w->i0] * w0 + s[b + w->i1] * w1;
        d[o + x] = t0 * hw0 + t1 * hw1;
      }
    } else { /* uint8: float32 work, rounded half to even (torch.round), then cast */
      const uint8_t *s = j->src;
      uint8_t *d = j->dst;
      float hw0 = (float)h->w0, hw1 = (float)h->w1;
      for (int64_t x = 0; x < j->ow; x++) {
        const tap *w = &j->tw[x];
        float w0 = (float)w->w0, w1 = (float)w->w1;
        float t0 = (float)s[a + w->i0] * w0 + (float)s[a + w->i1] * w1;
        float t1 = (float)s[b + w->i0] * w0 + (float)s[b + w->i1] * w1;
        float v = nearbyintf(t0 * hw0 + t1 * hw1);
        d[o + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
  }
}

gs_status gs_resize_bilinear(const gs_tensor *x, int64_t oh, int64_t ow, gs_tensor **out) {
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
  job j = {gs_tensor_ptr(c), gs_tensor_ptr(y), x->dtype, ih, iw, oh, ow, th, tw};
  if (planes * oh > 0) s = gs_parallel_for(planes * oh, planes * oh * ow * 8, rows, &j);
  free(th), free(tw);
  gs_tensor_release(c);
  if (s != GS_OK) { gs_tensor_release(y); return s; }
  *out = y;
  return GS_OK;
}
