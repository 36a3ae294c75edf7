/* gs_op_factory.c: tensors made from nothing (full, arange, linspace, eye)
 * and random fills from the shared Philox stream. */
#include <math.h>
#include <string.h>
#include "gs_ops.h"

gs_status gs_fill_(gs_tensor *x, gs_scalar v) {
  const gs_backend *be;
  GS_DISPATCH(be, x, fill, "fill_");
  GS_TRY(gs_check_writable(x));
  gs_log_op("fill_", x);
  GS_TRY(be->fill(x, v));
  x->buf->version++;
  return GS_OK;
}

gs_status gs_fill_tensor_(gs_tensor *x, const gs_tensor *v) {
  if (v->ndim != 0)
    return gs_error("fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.", v->ndim);
  return gs_copy_(x, v);
}

gs_status gs_full(gs_device dev, gs_dtype dt, int ndim, const int64_t *shape, gs_scalar v, gs_tensor **out) {
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(dev, dt, ndim, shape, &t));
  gs_status s = gs_fill_(t, v);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  *out = t;
  return GS_OK;
}

gs_status gs_arange(gs_device dev, gs_dtype dt, double start, double end, double step, gs_tensor **out) {
  if (step == 0) return gs_error("arange: step must be nonzero");
  if (!isfinite(start) || !isfinite(end)) return gs_error("arange: unsupported range: %g -> %g", start, end);
  if ((step > 0 && end < start) || (step < 0 && end > start))
    return gs_error("arange: upper bound and larger bound inconsistent with step sign");
  double n = ceil((end - start) / step);
  if (n > 1e15) return gs_error("arange: the range %g to %g with step %g has too many elements", start, end, step);
  int64_t len = (int64_t)n;
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(dev, dt, 1, &len, &t));
  const gs_backend *be = gs_device_backend(gs_tensor_device(t));
  gs_log_op("arange", t);
  gs_status s = be->arange ? be->arange(t, start, step) : gs_no_kernel("arange", t);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  *out = t;
  return GS_OK;
}

/* Computed on the host from both ends (as PyTorch does, so the last value
 * is exactly `end`), then moved. */
gs_status gs_linspace(gs_device dev, gs_dtype dt, double start, double end, int64_t n, gs_tensor **out) {
  if (n < 0) return gs_error("linspace: number of steps must be non-negative, got %lld", (long long)n);
  gs_tensor *h, *r;
  GS_TRY(gs_tensor_empty(gs_cpu(), GS_FLOAT64, 1, &n, &h));
  double *p = (double *)gs_tensor_ptr(h);
  double step = n > 1 ? (end - start) / (double)(n - 1) : 0;
  int64_t half = n / 2;
  for (int64_t i = 0; i < n; i++) p[i] = i < half ? start + step * (double)i : end - step * (double)(n - 1 - i);
  /* one step is `start` (PyTorch: linspace(-1, 1, 1) == [-1.]); the loop
   * above would give `end` since half == 0 */
  if (n == 1) p[0] = start;
  gs_status s = gs_to(h, dev, dt, &r);
  gs_tensor_release(h);
  if (s == GS_OK) *out = r;
  return s;
}

gs_status gs_eye(gs_device dev, gs_dtype dt, int64_t n, int64_t m, gs_tensor **out) {
  int64_t shape[2] = {n, m};
  gs_tensor *t, *diag;
  GS_TRY(gs_full(dev, dt, 2, shape, gs_scalar_i(0), &t));
  int64_t len = n < m ? n : m, stride = m + 1;
  diag = gs_tensor_view_of(t, 1, &len, &stride, 0);
  gs_status s = diag ? gs_fill_(diag, gs_scalar_i(1)) : gs_error_code(GS_ERR_OOM, "out of memory");
  gs_tensor_release(diag);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  *out = t;
  return GS_OK;
}

/* ---- random ---- */
static uint64_t rng_seed = 67280421310721ull, rng_offset = 0;

void gs_manual_seed(uint64_t seed) { rng_seed = seed; rng_offset = 0; }
uint64_t gs_initial_seed(void) { return rng_seed; }

/* Draws into x: directly when x is contiguous in a kernel dtype, else into
 * a temporary that is then copied in (so any dtype and view works). */
static gs_status draw(gs_tensor *x, const gs_random_spec *r, gs_dtype kdt) {
  const gs_backend *be;
  GS_DISPATCH(be, x, random, "random");
  GS_TRY(gs_check_writable(x));
  int64_t n = gs_numel(x);
  gs_log_op(r->kind == GS_RAND_NORMAL ? "normal_" : r->kind == GS_RAND_INT ? "random_" : "uniform_", x);
  uint64_t offset = rng_offset;
  rng_offset += (uint64_t)n;
  if (gs_is_contiguous(x) && x->dtype == kdt) {
    GS_TRY(be->random(x, r, rng_seed, offset));
    x->buf->version++;
    return GS_OK;
  }
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(gs_tensor_device(x), kdt, x->ndim, x->shape, &t));
  gs_status s = be->random(t, r, rng_seed, offset);
  if (s == GS_OK) s = gs_copy_(x, t);
  gs_tensor_release(t);
  return s;
}

static gs_status need_float(const gs_tensor *x, const char *op) {
  if (gs_dtype_is_float(x->dtype)) return GS_OK;
  return gs_error("%s expects a floating point tensor, got %s", op, gs_dtype_name(x->dtype));
}

gs_status gs_uniform_(gs_tensor *x, double lo, double hi) {
  GS_TRY(need_float(x, "uniform_"));
  if (!(lo <= hi)) return gs_error("uniform_ expects to return a [from, to) range, but found from=%g > to=%g", lo, hi);
  gs_random_spec r = {.kind = GS_RAND_UNIFORM, .a = lo, .b = hi};
  return draw(x, &r, x->dtype == GS_FLOAT64 ? GS_FLOAT64 : GS_FLOAT32);
}

gs_status gs_normal_(gs_tensor *x, double mean, double std) {
  GS_TRY(need_float(x, "normal_"));
  if (!(std >= 0)) return gs_error("normal expects std >= 0.0, but found std %g", std);
  gs_random_spec r = {.kind = GS_RAND_NORMAL, .a = mean, .b = std};
  return draw(x, &r, x->dtype == GS_FLOAT64 ? GS_FLOAT64 : GS_FLOAT32);
}

/* The integers x's dtype holds: false when every int64 fits its range
 * (float32, float64, bfloat16), as PyTorch checks random_'s bounds. */
static bool int_range_of(gs_dtype dt, int64_t *min, int64_t *max) {
  switch (dt) {
  case GS_INT32: *min = INT32_MIN; *max = INT32_MAX; return true;
  case GS_INT16: *min = INT16_MIN; *max = INT16_MAX; return true;
  case GS_INT8: *min = INT8_MIN; *max = INT8_MAX; return true;
  case GS_UINT8: *min = 0; *max = UINT8_MAX; return true;
  case GS_BOOL: *min = 0; *max = 1; return true;
  case GS_FLOAT16: *min = -65504; *max = 65504; return true;
  default: return false;
  }
}

/* Integers in [lo, hi), drawn in exact int64 arithmetic (gs_philox.h),
 * then stored in x's dtype, whose range must hold lo and hi - 1. */
gs_status gs_randint_(gs_tensor *x, int64_t lo, int64_t hi) {
  if (lo >= hi) return gs_error("random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                                (long long)lo, (long long)hi);
  int64_t min, max;
  if (int_range_of(x->dtype, &min, &max)) {
    if (lo < min || lo > max)
      return gs_error("random_: from=%lld is out of bounds for %s (expected %lld to %lld)", (long long)lo,
                      gs_dtype_name(x->dtype), (long long)min, (long long)max);
    if (hi - 1 < min || hi - 1 > max) /* hi > lo: hi - 1 cannot overflow */
      return gs_error("random_: to - 1 = %lld is out of bounds for %s (expected %lld to %lld)", (long long)(hi - 1),
                      gs_dtype_name(x->dtype), (long long)min, (long long)max);
  }
  gs_random_spec r = {.kind = GS_RAND_INT, .lo = lo, .hi = hi};
  return draw(x, &r, GS_INT64);
}

/* A random permutation: Fisher-Yates on the host, each swap driven by one
 * element of a uniform draw, so it follows manual_seed like everything else. */
gs_status gs_randperm(gs_device dev, int64_t n, gs_tensor **out) {
  if (n < 0) return gs_error("randperm: n must be non-negative, got %lld", (long long)n);
  gs_tensor *keys, *idx;
  GS_TRY(gs_tensor_empty(gs_cpu(), GS_FLOAT64, 1, &n, &keys));
  gs_status s = gs_uniform_(keys, 0, 1);
  if (s != GS_OK) { gs_tensor_release(keys); return s; }
  s = gs_tensor_empty(gs_cpu(), GS_INT64, 1, &n, &idx);
  if (s != GS_OK) { gs_tensor_release(keys); return s; }
  double *k = (double *)gs_tensor_ptr(keys);
  int64_t *p = (int64_t *)gs_tensor_ptr(idx);
  for (int64_t i = 0; i < n; i++) p[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(k[i] * (double)(i + 1));
    if (j > i) j = i;
    int64_t t = p[i]; p[i] = p[j]; p[j] = t;
  }
  gs_tensor_release(keys);
  s = gs_to(idx, dev, GS_INT64, out);
  gs_tensor_release(idx);
  return s;
}
