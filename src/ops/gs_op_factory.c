/* gs_op_factory.c: tensors made from nothing (arange, linspace, eye) and
 * random fills from the shared Philox stream; full and fill_ are in
 * gs_op_fill.c, below the elementwise ops that use them. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ops/gs_ops.h"

/* A new tensor, filled (fill_status: how the filling went), or released. */
static gs_status fresh(gs_tensor *t, gs_status fill_status, gs_tensor **out) {
  if (fill_status != GS_OK) { gs_tensor_release(t); return fill_status; }
  t->buf->version = 0; /* a new tensor is at version 0, as PyTorch's, however it was filled */
  *out = t;
  return GS_OK;
}

/* step's sign (-1, 0, 1) against end's side of start (end_vs_start: the
 * sign of end - start), for the double and the int64 arange alike */
static gs_status arange_check(int step_sign, int end_vs_start) {
  if (step_sign == 0) return gs_error("arange: step must be nonzero");
  if ((step_sign > 0 && end_vs_start < 0) || (step_sign < 0 && end_vs_start > 0))
    return gs_error("arange: upper bound and larger bound inconsistent with step sign");
  return GS_OK;
}
#define SIGN(a, b) (((a) > (b)) - ((a) < (b)))

gs_status gs_arange(gs_device dev, gs_dtype dt, double start, double end, double step, gs_tensor **out) {
  if (step == 0) return arange_check(0, 0);
  if (!isfinite(start) || !isfinite(end)) return gs_error("arange: unsupported range: %g -> %g", start, end);
  GS_TRY(arange_check(SIGN(step, 0), SIGN(end, start)));
  double n = ceil((end - start) / step);
  if (n > 1e15) return gs_error("arange: the range %g to %g with step %g has too many elements", start, end, step);
  int64_t len = (int64_t)n;
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(dev, dt, 1, &len, &t));
  const gs_backend *be = gs_device_backend(gs_tensor_device(t));
  gs_log_op("arange", t);
  gs_status s = be->arange ? be->arange(t, start, step) : gs_no_kernel("arange", t);
  return fresh(t, s, out);
}

gs_status gs_arange_int(gs_device dev, gs_dtype dt, int64_t start, int64_t end, int64_t step, gs_tensor **out) {
  const double exact = 0x1p53;
  if (dt != GS_INT64 || (fabs((double)start) <= exact && fabs((double)end) <= exact && fabs((double)step) <= exact))
    return gs_arange(dev, dt, (double)start, (double)end, (double)step, out);
  /* integers beyond 2^53 are not exact as doubles: count in int64 from 0
   * (exact), then scale and shift with int64 arithmetic */
  GS_TRY(arange_check(SIGN(step, 0), SIGN(end, start)));
  uint64_t span = step > 0 ? (uint64_t)end - (uint64_t)start : (uint64_t)start - (uint64_t)end;
  uint64_t st = step > 0 ? (uint64_t)step : 0 - (uint64_t)step, n = span / st + (span % st != 0);
  gs_tensor *k, *ks;
  GS_TRY(gs_arange(dev, GS_INT64, 0, (double)n, 1, &k));
  gs_status s = gs_binary_scalar(GS_B_MUL, k, gs_scalar_i(step), false, &ks);
  gs_tensor_release(k);
  GS_TRY(s);
  s = gs_binary_scalar(GS_B_ADD, ks, gs_scalar_i(start), false, out);
  gs_tensor_release(ks);
  return s;
}

/* Computed from both ends (as PyTorch does, so the last value is exactly
 * `end`). */
/* Values are computed on the host a chunk at a time and copied into the
 * result, which is allocated on its device first: the device's memory cap
 * is checked before any work, and the host never holds the whole result. */
#define FILL_CHUNK ((int64_t)1 << 20)

gs_status gs_linspace(gs_device dev, gs_dtype dt, double start, double end, int64_t n, gs_tensor **out) {
  if (n < 0) return gs_error("linspace: number of steps must be non-negative, got %lld", (long long)n);
  gs_tensor *r, *h = NULL;
  GS_TRY(gs_tensor_empty(dev, dt, 1, &n, &r));
  int64_t m = n < FILL_CHUNK ? n : FILL_CHUNK;
  gs_status s = gs_tensor_empty(gs_cpu(), GS_FLOAT64, 1, &m, &h);
  double step = n > 1 ? (end - start) / (double)(n - 1) : 0;
  int64_t half = n / 2;
  for (int64_t i0 = 0; i0 < n && s == GS_OK; i0 += m) {
    int64_t len = n - i0 < m ? n - i0 : m;
    double *p = (double *)gs_tensor_ptr(h);
    for (int64_t k = 0; k < len; k++) {
      int64_t i = i0 + k;
      p[k] = i < half ? start + step * (double)i : end - step * (double)(n - 1 - i);
    }
    /* one step is `start` (PyTorch: linspace(-1, 1, 1) == [-1.]); the
     * formula would give `end` since half == 0 */
    if (n == 1) p[0] = start;
    gs_tensor *dst = NULL, *src = NULL;
    s = gs_narrow(r, 0, i0, len, &dst);
    if (s == GS_OK) s = gs_narrow(h, 0, 0, len, &src);
    if (s == GS_OK) s = gs_copy_(dst, src);
    gs_tensor_release(dst);
    gs_tensor_release(src);
  }
  gs_tensor_release(h);
  return fresh(r, s, out);
}

gs_status gs_eye(gs_device dev, gs_dtype dt, int64_t n, int64_t m, gs_tensor **out) {
  if (n < 0 || m < 0)
    return gs_error("torch.eye: n and m must be non-negative, got %lld and %lld", (long long)n, (long long)m);
  int64_t shape[2] = {n, m};
  gs_tensor *t, *diag;
  GS_TRY(gs_full(dev, dt, 2, shape, gs_scalar_i(0), &t));
  int64_t len = n < m ? n : m, stride = m + 1;
  diag = gs_tensor_view_of(t, 1, &len, &stride, 0);
  gs_status s = diag ? gs_fill_(diag, gs_scalar_i(1)) : gs_error_code(GS_ERR_OOM, "out of memory");
  gs_tensor_release(diag);
  return fresh(t, s, out);
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
  if (!isfinite(hi - lo))
    return gs_error("uniform_ expects a finite range: to - from must be at most %g, but found from=%g and to=%g",
                    DBL_MAX, lo, hi);
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
gs_status gs_rand(gs_device dev, gs_dtype dt, int ndim, const int64_t *shape, bool normal, gs_tensor **out) {
  if (!gs_dtype_is_float(dt))
    return gs_error("%s: expected a floating point dtype, got %s", normal ? "randn" : "rand", gs_dtype_name(dt));
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(dev, dt, ndim, shape, &t));
  return fresh(t, normal ? gs_normal_(t, 0, 1) : gs_uniform_(t, 0, 1), out);
}

gs_status gs_randint(gs_device dev, gs_dtype dt, int ndim, const int64_t *shape, int64_t lo, int64_t hi,
                     gs_tensor **out) {
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(dev, dt, ndim, shape, &t));
  return fresh(t, gs_randint_(t, lo, hi), out);
}

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

/* The largest integer n such that 0..n are all exact in dt (randperm's
 * values must be), or -1 when dt cannot hold a permutation. */
static int64_t exact_int_limit(gs_dtype dt) {
  switch (dt) {
  case GS_INT8: return INT8_MAX;
  case GS_UINT8: return UINT8_MAX;
  case GS_INT16: return INT16_MAX;
  case GS_INT32: return INT32_MAX;
  case GS_INT64: return INT64_MAX;
  case GS_FLOAT16: return 2048;
  case GS_BFLOAT16: return 256;
  case GS_FLOAT32: return (int64_t)1 << 24;
  case GS_FLOAT64: return (int64_t)1 << 53;
  default: return -1;
  }
}

/* A random permutation of first .. first+n-1: Fisher-Yates, each swap
 * driven by one uniform draw (drawn a chunk at a time), so it follows
 * manual_seed like everything else. The result is allocated on its device
 * and in its dtype first (the device's cap is checked before any work);
 * the shuffle runs in place when the result is a cpu int64 tensor,
 * else in a host int64 array copied in at the end. */
gs_status gs_randperm(gs_device dev, gs_dtype dt, int64_t n, int64_t first, gs_tensor **out) {
  if (n < 0) return gs_error("randperm: n must be non-negative, got %lld", (long long)n);
  int64_t limit = exact_int_limit(dt);
  if (limit < 0) return gs_error("randperm: dtype %s cannot hold a permutation", gs_dtype_name(dt));
  if (n > 0 && (first > limit || n - 1 > limit - first)) /* first + n - 1 > limit, without overflow */
    return gs_error("randperm: %lld values do not all fit exactly in %s (at most %lld)", (long long)n,
                    gs_dtype_name(dt), (long long)(limit - first + 1));
  gs_tensor *r, *idx = NULL, *keys = NULL;
  GS_TRY(gs_tensor_empty(dev, dt, 1, &n, &r));
  gs_status s = GS_OK;
  bool in_place = dt == GS_INT64 && gs_tensor_on_cpu(r); /* a device fills through a queued copy */
  if (in_place) { idx = r; gs_tensor_retain(idx); }
  else s = gs_tensor_empty(gs_cpu(), GS_INT64, 1, &n, &idx);
  int64_t m = n < FILL_CHUNK ? n : FILL_CHUNK;
  if (s == GS_OK) s = gs_tensor_empty(gs_cpu(), GS_FLOAT64, 1, &m, &keys);
  if (s == GS_OK) {
    int64_t *p = (int64_t *)gs_tensor_ptr(idx);
    for (int64_t i = 0; i < n; i++) p[i] = first + i;
    /* keys for i = hi down to lo, one chunk per draw */
    for (int64_t hi = n - 1; hi > 0 && s == GS_OK; hi -= m) {
      int64_t lo = hi - m + 1 > 1 ? hi - m + 1 : 1;
      gs_tensor *kc = NULL;
      int64_t len = hi - lo + 1;
      s = gs_narrow(keys, 0, 0, len, &kc);
      if (s == GS_OK) s = gs_uniform_(kc, 0, 1);
      gs_tensor_release(kc);
      const double *k = (const double *)gs_tensor_ptr(keys);
      for (int64_t i = hi; i >= lo && s == GS_OK; i--) {
        int64_t j = (int64_t)(k[hi - i] * (double)(i + 1));
        if (j > i) j = i;
        int64_t t = p[i]; p[i] = p[j]; p[j] = t;
      }
    }
  }
  if (s == GS_OK && !in_place) s = gs_copy_(r, idx);
  if (s == GS_OK && in_place) r->buf->version++;
  gs_tensor_release(keys);
  gs_tensor_release(idx);
  return fresh(r, s, out);
}
