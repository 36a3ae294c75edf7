/* gs_op_util.c: what every op shares: device checks, broadcasting,
 * PyTorch's result_type, casts, copies between devices (counted), and the
 * placement log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/gs_ops.h"
#include "backend/sim/sim_queue.h"

bool gs_log_placement = false;
gs_transfer_stats gs_transfers;

void gs_log_op(const char *op, const gs_tensor *t) {
  if (!gs_log_placement) return;
  char name[24];
  gs_device_name(gs_tensor_device(t), name, sizeof name);
  fprintf(stdout, "Executing op %s in device %s\n", op, name);
  fflush(stdout);
}

/* PyTorch's short type names, used in its error messages. */
const char *gs_dtype_torch_name(gs_dtype t) {
  static const char *n[GS_NDTYPES] = {"Float", "Double", "Half", "BFloat16", "Long",
                                      "Int", "Short", "Char", "Byte", "Bool"};
  return n[t];
}

gs_status gs_check_same_device(const gs_tensor *a, const gs_tensor *b) {
  gs_device da = gs_tensor_device(a), db = gs_tensor_device(b);
  if (gs_device_equal(da, db)) return GS_OK;
  char na[24], nb[24];
  /* PyTorch names the CUDA device first when one side is the CPU */
  if (da.type == GS_CPU) { gs_device t = da; da = db; db = t; }
  gs_device_name(da, na, sizeof na);
  gs_device_name(db, nb, sizeof nb);
  return gs_error("Expected all tensors to be on the same device, but found at least two devices, %s and %s!", na, nb);
}

static void shape_str(int n, const int64_t *s, char *buf, size_t len) {
  size_t k = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < n && k < len; i++) k += (size_t)snprintf(buf + k, len - k, i ? ", %lld" : "%lld", (long long)s[i]);
  if (k < len) snprintf(buf + k, len - k, "]");
}

void gs_shape_str(const gs_tensor *t, char *buf, size_t len) { shape_str(t->ndim, t->shape, buf, len); }

gs_status gs_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      char s1[128], s2[128];
      shape_str(na, a, s1, sizeof s1);
      shape_str(nb, b, s2, sizeof s2);
      return gs_error("The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton "
                      "dimension %d (shapes %s and %s cannot be broadcast)", (long long)sa, (long long)sb,
                      i + 1, s1, s2);
    }
    out[i] = sa == 1 ? sb : sa;
  }
  *nout = n;
  return GS_OK;
}

gs_status gs_expand(const gs_tensor *x, int ndim, const int64_t *shape, gs_tensor **out) {
  if (ndim == x->ndim && memcmp(shape, x->shape, sizeof(int64_t) * (size_t)ndim) == 0) {
    gs_tensor_retain((gs_tensor *)x); /* already that shape: no new header */
    *out = (gs_tensor *)x;
    return GS_OK;
  }
  if (ndim < x->ndim) return gs_error("cannot expand a %d-d tensor to %d dimensions", x->ndim, ndim);
  int64_t stride[GS_MAX_DIMS];
  for (int i = 0; i < ndim; i++) {
    int j = x->ndim - ndim + i;
    if (j < 0) { stride[i] = 0; continue; }
    if (x->shape[j] == shape[i]) stride[i] = x->stride[j];
    else if (x->shape[j] == 1) stride[i] = 0;
    else {
      char s1[128], s2[128];
      gs_shape_str(x, s1, sizeof s1);
      shape_str(ndim, shape, s2, sizeof s2);
      return gs_error("The expanded size of the tensor (%lld) must match the existing size (%lld) at "
                      "non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                      (long long)shape[i], (long long)x->shape[j], i + 1, s2, s1);
    }
  }
  *out = gs_tensor_view_of(x, ndim, shape, stride, x->offset);
  return *out ? GS_OK : gs_error_code(GS_ERR_OOM, "out of host memory");
}

gs_status gs_no_kernel(const char *op, const gs_tensor *t) {
  char name[24];
  gs_device_name(gs_tensor_device(t), name, sizeof name);
  const gs_backend *be = gs_device_backend(gs_tensor_device(t));
  return gs_error("%s is not implemented on %s (backend %s)", op, name, be ? be->name : "none");
}

/* result_type: dimensioned tensors outrank 0-d tensors, which outrank
 * Lua numbers; a lower rank only matters when its category is higher. */
static gs_dtype combine(int has_hi, gs_dtype hi, int has_lo, gs_dtype lo) {
  if (!has_hi) return lo;
  if (!has_lo) return hi;
  if (gs_dtype_is_float(hi)) return hi;
  if (hi == GS_BOOL || gs_dtype_is_float(lo)) return gs_promote(hi, lo);
  return hi;
}

gs_dtype gs_result_type2(const gs_tensor *a, const gs_tensor *b) {
  int hd = 0, hz = 0;
  gs_dtype d = GS_BOOL, z = GS_BOOL;
  const gs_tensor *ts[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    if (ts[i]->ndim > 0) { d = hd ? gs_promote(d, ts[i]->dtype) : ts[i]->dtype; hd = 1; }
    else { z = hz ? gs_promote(z, ts[i]->dtype) : ts[i]->dtype; hz = 1; }
  }
  return combine(hd, d, hz, z);
}

gs_dtype gs_result_type_scalar(const gs_tensor *a, gs_scalar s) {
  gs_dtype w = s.is_bool ? GS_BOOL : s.is_float ? GS_FLOAT32 : GS_INT64; /* default dtype / long */
  return combine(1, a->dtype, 1, w);
}

gs_status gs_cast(const gs_tensor *x, gs_dtype dt, gs_tensor **out) {
  if (x->dtype == dt) { gs_tensor_retain((gs_tensor *)x); *out = (gs_tensor *)x; return GS_OK; }
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(gs_tensor_device(x), dt, x->ndim, x->shape, &t));
  gs_status s = gs_copy_(t, x);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  *out = t;
  return GS_OK;
}

static void count(gs_transfer_count *c, uint64_t bytes) { c->count++; c->bytes += bytes; }

/* A copy within one device: the device's copy kernel, no transfer. */
static gs_status copy_same_device(gs_tensor *dst, const gs_tensor *src) {
  const gs_backend *be;
  GS_DISPATCH(be, dst, copy, "copy_");
  return be->copy(dst, src);
}

/* n raw bytes from one device's memory to another's. */
static gs_status move_bytes(gs_device dd, void *to, gs_device sd, const void *from, size_t n) {
  const gs_backend *sb = gs_device_backend(sd), *db = gs_device_backend(dd);
  if (sd.type == GS_CPU) return db->memcpy_h2d(dd.index, to, from, n);
  if (dd.type == GS_CPU) return sb->memcpy_d2h(sd.index, to, from, n);
  if (sb == db && db->memcpy_d2d) return db->memcpy_d2d(dd.index, to, sd.index, from, n);
  /* through the host */
  gs_tensor *h;
  int64_t len = (int64_t)n;
  GS_TRY(gs_tensor_empty(gs_cpu(), GS_UINT8, 1, &len, &h));
  gs_status st = sb->memcpy_d2h(sd.index, gs_tensor_ptr(h), from, n);
  if (st == GS_OK) st = db->memcpy_h2d(dd.index, to, gs_tensor_ptr(h), n);
  gs_tensor_release(h);
  return st;
}

/* Copies between two different devices. Host memories (the cpu and
 * simulated GPUs: the backend's host_memory flag) copy element by element
 * directly. Otherwise raw bytes move with the backends' memcpy slots from
 * a contiguous source (the source itself when it is contiguous) straight
 * into the destination when it is contiguous with the source's dtype;
 * only a dtype change or a strided destination goes through a staging
 * tensor on the destination's device, then the device's copy kernel.
 * Every such copy counts as exactly one transfer (torch.cuda.transfers()):
 * h2d when the source is the cpu, d2h when the destination is, d2d
 * between two GPUs (even when it bounces through the host), with the
 * bytes of the source elements moved. Printing, item() and tolist() of a
 * GPU tensor are one d2h each (gs_to_host_contiguous); a copy within one
 * device is no transfer. */
static gs_status copy_across(gs_tensor *dst, const gs_tensor *src, bool non_blocking) {
  gs_device dd = gs_tensor_device(dst), sd = gs_tensor_device(src);
  uint64_t bytes = (uint64_t)gs_numel(src) * gs_dtype_size(src->dtype);
  gs_transfer_count *c = sd.type == GS_CPU ? &gs_transfers.h2d : dd.type == GS_CPU ? &gs_transfers.d2h : &gs_transfers.d2d;
  if (gs_tensor_host_addressable(dst) && gs_tensor_host_addressable(src)) {
    /* a device that queues its work copies in its own order (and waits
     * where the host reads: errors its kernels found surface there) */
    const gs_backend *sb = gs_device_backend(sd), *db = gs_device_backend(dd);
    const gs_backend *q = sb->copy_queued ? sb : db->copy_queued ? db : NULL;
    GS_TRY(q ? q->copy_queued(dst, src, non_blocking) : gs_device_backend(gs_cpu())->copy(dst, src));
    count(c, bytes);
    return GS_OK;
  }
  /* a copy from a real GPU to the host waits for it (cudaMemcpy) */
  if (dd.type == GS_CPU) GS_TRY(gs_sync_note("a copy to the host"));
  bool direct = dst->dtype == src->dtype && gs_is_contiguous(dst);
  gs_tensor *s0 = NULL, *stage = NULL;
  gs_status st = gs_contiguous(src, &s0);
  if (st == GS_OK && !direct) st = gs_tensor_empty(dd, src->dtype, src->ndim, src->shape, &stage);
  gs_tensor *to = direct ? dst : stage;
  if (st == GS_OK && bytes > 0) st = move_bytes(dd, gs_tensor_ptr(to), sd, gs_tensor_ptr(s0), bytes);
  if (st == GS_OK) count(c, bytes);
  if (st == GS_OK && !direct) st = gs_device_backend(dd)->copy(dst, stage);
  gs_tensor_release(s0);
  gs_tensor_release(stage);
  return st;
}

/* The first and one-past-last element a view can touch (strides >= 0). */
static void span(const gs_tensor *t, int64_t *lo, int64_t *hi) {
  int64_t end = t->offset;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] == 0) { *lo = *hi = t->offset; return; }
    end += (t->shape[d] - 1) * t->stride[d];
  }
  *lo = t->offset;
  *hi = end + 1;
}

bool gs_partial_overlap(const gs_tensor *w, const gs_tensor *r) {
  if (w->buf != r->buf || w->dtype != r->dtype) return w->buf == r->buf;
  bool same = w->offset == r->offset && w->ndim == r->ndim &&
              memcmp(w->shape, r->shape, sizeof(int64_t) * (size_t)w->ndim) == 0 &&
              memcmp(w->stride, r->stride, sizeof(int64_t) * (size_t)w->ndim) == 0;
  if (same) return false;
  int64_t wl, wh, rl, rh;
  span(w, &wl, &wh);
  span(r, &rl, &rh);
  return wl < rh && rl < wh;
}

gs_status gs_check_writable(const gs_tensor *x) {
  if (gs_numel(x) == 0) return GS_OK;
  for (int i = 0; i < x->ndim; i++)
    if (x->stride[i] == 0 && x->shape[i] > 1)
      return gs_error("unsupported operation: more than one element of the written-to tensor refers to a single "
                      "memory location. Please clone() the tensor before performing the operation.");
  return GS_OK;
}

gs_status gs_copy_(gs_tensor *dst, const gs_tensor *src) { return gs_copy_ex(dst, src, false); }

gs_status gs_copy_ex(gs_tensor *dst, const gs_tensor *src, bool non_blocking) {
  GS_TRY(gs_check_writable(dst));
  if (gs_partial_overlap(dst, src)) { /* read all of src before writing */
    gs_tensor *tmp;
    GS_TRY(gs_clone(src, &tmp));
    gs_status s = gs_copy_(dst, tmp);
    gs_tensor_release(tmp);
    return s;
  }
  gs_tensor *e;
  GS_TRY(gs_expand(src, dst->ndim, dst->shape, &e));
  gs_status s;
  if (gs_device_equal(gs_tensor_device(dst), gs_tensor_device(src))) {
    gs_log_op("copy_", dst);
    s = copy_same_device(dst, e);
  } else {
    gs_log_op("_to_copy", dst); /* a move between memories, logged on the destination */
    s = copy_across(dst, e, non_blocking);
  }
  gs_tensor_release(e);
  if (s == GS_OK) dst->buf->version++;
  return s;
}

gs_status gs_contiguous(const gs_tensor *x, gs_tensor **out) {
  if (gs_is_contiguous(x)) { gs_tensor_retain((gs_tensor *)x); *out = (gs_tensor *)x; return GS_OK; }
  return gs_clone(x, out);
}

gs_status gs_clone(const gs_tensor *x, gs_tensor **out) {
  gs_tensor *t;
  GS_TRY(gs_tensor_empty_like(x, &t));
  gs_status s = gs_copy_(t, x);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  *out = t;
  return GS_OK;
}

gs_status gs_to(const gs_tensor *x, gs_device dev, gs_dtype dt, gs_tensor **out) {
  return gs_to_ex(x, dev, dt, false, out);
}

gs_status gs_to_ex(const gs_tensor *x, gs_device dev, gs_dtype dt, bool non_blocking, gs_tensor **out) {
  GS_TRY(gs_device_resolve(dev, &dev));
  if (gs_device_equal(dev, gs_tensor_device(x)) && dt == x->dtype) {
    gs_tensor_retain((gs_tensor *)x);
    *out = (gs_tensor *)x;
    return GS_OK;
  }
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(dev, dt, x->ndim, x->shape, &t));
  gs_status s = gs_copy_ex(t, x, non_blocking);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  *out = t;
  return GS_OK;
}

gs_status gs_to_host_contiguous(const gs_tensor *x, gs_tensor **out) {
  if (gs_tensor_on_cpu(x)) return gs_contiguous(x, out);
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(gs_cpu(), x->dtype, x->ndim, x->shape, &t));
  gs_status s = gs_copy_(t, x);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  *out = t;
  return GS_OK;
}
