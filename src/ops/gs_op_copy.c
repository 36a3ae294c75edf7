/* gs_op_copy.c: the copy engine, every move of elements between tensors:
 * copy_ within a device (the device's copy kernel) and across devices
 * (host memories element by element, or raw bytes through the backends'
 * memcpy slots with staging where a dtype or layout changes), pinned and
 * pageable, blocking or not; to(), clone(), contiguous(), the host copies
 * that printing and item() read; and the transfer counters
 * (torch.cuda.transfers()). */
#include <string.h>
#include "ops/gs_ops.h"
#include "core/gs_streams.h"

gs_transfer_stats gs_transfers;

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
