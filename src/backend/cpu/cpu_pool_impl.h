/* cpu_pool_impl.h: the pooling and resizing loops for one element type,
 * included by cpu_pool.c once per type with T (float or double) and FN(name)
 * (the name with the type's suffix) defined. Every function handles the
 * planes [p0, p1) of a job, so the caller splits planes over threads; a
 * plane is written by one thread only, which keeps the backward passes
 * (scatters inside a plane) deterministic. The loops are inlined into
 * cpu_pool.c's copy per instruction set (cpu_isa.h). */

/* ---- pooling ---- */

/* Max pooling by 2x2 windows at stride 2, no padding or dilation, every
 * window inside the plane (LeNet's, VGG's pools): the general loop's scan
 * (row by row, a cell wins if greater or NaN, so ties keep the first and
 * the last NaN wins) written out for the 4 cells, without the window
 * arithmetic per output (the general loop was 17% of a LeNet step). The
 * first cell starts as the best: the same as starting from -inf with it
 * as the index, whatever its value. (The op layer always asks max
 * pooling for its indices; without them the general loop runs.) */
GS_ISA_INLINE static bool FN(pool_max2x2)(const gs_pool2d_params *p, T *out, int64_t *argmax, const T *x, int64_t p0,
                            int64_t p1) {
  const int64_t h = p->h, w = p->w, oh = p->oh, ow = p->ow;
  if (!argmax || p->kind != GS_POOL_MAX || p->kh != 2 || p->kw != 2 || p->sh != 2 || p->sw != 2 || p->ph != 0 ||
      p->pw != 0 || p->dh != 1 || p->dw != 1 || 2 * oh > h || 2 * ow > w || w >= INT32_MAX)
    return false;
  for (int64_t pl = p0; pl < p1; pl++) {
    const T *xp = x + pl * h * w;
    T *op = out + pl * oh * ow;
    int64_t *ap = argmax + pl * oh * ow;
    for (int64_t i = 0; i < oh; i++) {
      const T *r0 = xp + 2 * i * w, *r1 = r0 + w;
      int64_t base = 2 * i * w;
      T *o = op + i * ow;
      /* selects, not branches (| not ||): on real data each comparison is
       * a coin toss, and mispredicted branches were most of this loop's
       * time; without branches it vectorizes */
      int64_t *a = ap + i * ow;
      for (int64_t j = 0; j < ow; j++) {
        T best = r0[2 * j], v;
        int32_t at = 0, c;
        v = r0[2 * j + 1];
        c = (v > best) | (v != v); best = c ? v : best; at = c ? 1 : at;
        v = r1[2 * j];
        c = (v > best) | (v != v); best = c ? v : best; at = c ? (int32_t)w : at;
        v = r1[2 * j + 1];
        c = (v > best) | (v != v); best = c ? v : best; at = c ? (int32_t)w + 1 : at;
        o[j] = best;
        a[j] = base + 2 * j + at;
      }
    }
  }
  return true;
}

/* out/argmax [planes, oh, ow] from x [planes, h, w] (argmax may be NULL) */
GS_ISA_INLINE static void FN(pool_fwd)(const gs_pool2d_params *p, T *out, int64_t *argmax, const T *x, int64_t p0, int64_t p1) {
  const int64_t h = p->h, w = p->w, oh = p->oh, ow = p->ow;
  if (FN(pool_max2x2)(p, out, argmax, x, p0, p1)) return;
  for (int64_t pl = p0; pl < p1; pl++) {
    const T *xp = x + pl * h * w;
    T *op = out + pl * oh * ow;
    int64_t *ap = argmax ? argmax + pl * oh * ow : NULL;
    bool is_max = p->kind == GS_POOL_MAX || p->kind == GS_POOL_ADAPTIVE_MAX;
    for (int64_t i = 0; i < oh; i++) {
      int64_t y0, y1, dy = 1;
      pool_rows(p, i, &y0, &y1, &dy, true);
      for (int64_t j = 0; j < ow; j++) {
        int64_t x0, x1, dx = 1;
        pool_rows(p, j, &x0, &x1, &dx, false);
        if (is_max) { /* padding never wins; ties keep the first; NaN wins */
          T best = -INFINITY;
          /* a dilated window can miss the plane entirely: -inf and no cell
           * (-1), where PyTorch reports a cell outside the plane */
          int64_t at = y0 < y1 && x0 < x1 ? y0 * w + x0 : -1;
          for (int64_t y = y0; y < y1; y += dy)
            for (int64_t xx = x0; xx < x1; xx += dx) {
              T v = xp[y * w + xx];
              if (v > best || v != v) { best = v; at = y * w + xx; }
            }
          op[i * ow + j] = best;
          if (ap) ap[i * ow + j] = at;
        } else {
          double sum = 0;
          for (int64_t y = y0; y < y1; y++)
            for (int64_t xx = x0; xx < x1; xx++) sum += xp[y * w + xx];
          op[i * ow + j] = (T)(sum / (double)pool_divisor(p, i, j));
        }
      }
    }
  }
}

/* gx [planes, h, w] from gy [planes, oh, ow]: each output's gradient goes
 * to its argmax cell (max) or is spread over its window (avg) */
GS_ISA_INLINE static void FN(pool_bwd)(const gs_pool2d_params *p, T *gx, const T *gy, const int64_t *argmax, int64_t p0,
                         int64_t p1) {
  const int64_t h = p->h, w = p->w, oh = p->oh, ow = p->ow;
  for (int64_t pl = p0; pl < p1; pl++) {
    T *gp = gx + pl * h * w;
    const T *g = gy + pl * oh * ow;
    memset(gp, 0, sizeof(T) * (size_t)(h * w));
    if (argmax) {
      const int64_t *ap = argmax + pl * oh * ow;
      for (int64_t k = 0; k < oh * ow; k++)
        if (ap[k] >= 0) gp[ap[k]] += g[k];
      continue;
    }
    for (int64_t i = 0; i < oh; i++) {
      int64_t y0, y1, dy = 1;
      pool_rows(p, i, &y0, &y1, &dy, true);
      for (int64_t j = 0; j < ow; j++) {
        int64_t x0, x1, dx = 1;
        pool_rows(p, j, &x0, &x1, &dx, false);
        T share = (T)(g[i * ow + j] / (T)pool_divisor(p, i, j));
        for (int64_t y = y0; y < y1; y++)
          for (int64_t xx = x0; xx < x1; xx++) gp[y * w + xx] += share;
      }
    }
  }
}

/* ---- resizing ---- */

/* The per-axis table of a resize: for output position o, the source
 * cells i0[o], i1[o] and the weight l1[o] of i1 (nearest: i1 = i0, l1 = 0),
 * in T's arithmetic as PyTorch's CPU kernels compute it. */
static void FN(resize_axis)(const gs_resize_params *p, int64_t in, int64_t out, double user_scale, int64_t *i0,
                            int64_t *i1, T *l1) {
  if (p->mode == GS_RESIZE_NEAREST) {
    float scale = user_scale > 0 ? (float)(1.0 / user_scale) : (float)in / (float)out;
    for (int64_t o = 0; o < out; o++) {
      int64_t s = out == in ? o : out == 2 * in ? o >> 1 : (int64_t)floorf((float)o * scale);
      i0[o] = i1[o] = s < in - 1 ? s : in - 1;
      l1[o] = 0;
    }
    return;
  }
  T scale = p->align_corners ? (out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0)
                             : user_scale > 0 ? (T)(1.0 / user_scale) : (T)in / (T)out;
  for (int64_t o = 0; o < out; o++) {
    T src = p->align_corners ? scale * (T)o : scale * ((T)o + (T)0.5) - (T)0.5;
    if (src < 0) src = 0;
    int64_t a = (int64_t)src;
    i0[o] = a;
    i1[o] = a + (a < in - 1 ? 1 : 0);
    T l = src - (T)a;
    l1[o] = l < 0 ? 0 : l > 1 ? 1 : l;
  }
}

typedef struct {
  const gs_resize_params *p;
  const int64_t *r0, *r1, *c0, *c1; /* rows and columns tables */
  const T *rl, *cl;
} FN(resize_tab);

GS_ISA_INLINE static void FN(resize_fwd)(const FN(resize_tab) *t, T *out, const T *x, int64_t p0, int64_t p1) {
  const gs_resize_params *p = t->p;
  const int64_t h = p->h, w = p->w, oh = p->oh, ow = p->ow;
  for (int64_t pl = p0; pl < p1; pl++) {
    const T *xp = x + pl * h * w;
    T *op = out + pl * oh * ow;
    if (p->mode == GS_RESIZE_NEAREST) { /* a copy: no weights (0 * inf would be NaN) */
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) op[i * ow + j] = xp[t->r0[i] * w + t->c0[j]];
      continue;
    }
    for (int64_t i = 0; i < oh; i++) {
      const T *ra = xp + t->r0[i] * w, *rb = xp + t->r1[i] * w;
      T hl1 = t->rl[i], hl0 = 1 - hl1;
      for (int64_t j = 0; j < ow; j++) {
        T wl1 = t->cl[j], wl0 = 1 - wl1;
        int64_t a = t->c0[j], b = t->c1[j];
        op[i * ow + j] = hl0 * (wl0 * ra[a] + wl1 * ra[b]) + hl1 * (wl0 * rb[a] + wl1 * rb[b]);
      }
    }
  }
}

GS_ISA_INLINE static void FN(resize_bwd)(const FN(resize_tab) *t, T *gx, const T *gy, int64_t p0, int64_t p1) {
  const gs_resize_params *p = t->p;
  const int64_t h = p->h, w = p->w, oh = p->oh, ow = p->ow;
  for (int64_t pl = p0; pl < p1; pl++) {
    T *gp = gx + pl * h * w;
    const T *g = gy + pl * oh * ow;
    memset(gp, 0, sizeof(T) * (size_t)(h * w));
    if (p->mode == GS_RESIZE_NEAREST) {
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) gp[t->r0[i] * w + t->c0[j]] += g[i * ow + j];
      continue;
    }
    for (int64_t i = 0; i < oh; i++) {
      T *ra = gp + t->r0[i] * w, *rb = gp + t->r1[i] * w;
      T hl1 = t->rl[i], hl0 = 1 - hl1;
      for (int64_t j = 0; j < ow; j++) {
        T wl1 = t->cl[j], wl0 = 1 - wl1, v = g[i * ow + j];
        int64_t a = t->c0[j], b = t->c1[j];
        ra[a] += hl0 * wl0 * v;
        ra[b] += hl0 * wl1 * v;
        rb[a] += hl1 * wl0 * v;
        rb[b] += hl1 * wl1 * v;
      }
    }
  }
}
