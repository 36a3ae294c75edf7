/* gs_tensor.c: buffers, tensor headers, reference counting, geometry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gs_backend.h"
#include "core/gs_tensor.h"

/* Set by the binding layer: frees what the Lua collector can (tensors
 * that are garbage hold device memory the collector cannot see). */
void (*gs_oom_hook)(void) = NULL;

static void format_bytes(double b, char *buf, size_t n) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) { b /= 1024; u++; }
  if (u == 0) snprintf(buf, n, "%.0f bytes", b);
  else snprintf(buf, n, "%.2f %s", b, units[u]);
}

/* Tensor and buffer headers come from per-thread free lists: a tiny op
 * makes one of each, and malloc was a third of its cost. Under
 * AddressSanitizer they go straight to malloc/free, so a header used
 * after its release is reported instead of silently reused; under
 * ThreadSanitizer too, so a header's reuse is seen as a free and a malloc. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GS_HEADER_POOL 0
#else
#define GS_HEADER_POOL 1
#endif
typedef union pooled { union pooled *next; gs_tensor t; gs_buffer b; } pooled;
static _Thread_local pooled *free_headers;
static _Thread_local int free_count;

static void *header_alloc(void) {
  if (!GS_HEADER_POOL) return malloc(sizeof(pooled));
  pooled *p = free_headers;
  if (p) { free_headers = p->next; free_count--; return p; }
  return malloc(sizeof(pooled));
}

static void header_free(void *h) {
  if (!GS_HEADER_POOL || free_count >= 4096) { free(h); return; }
  pooled *p = h;
  p->next = free_headers;
  free_headers = p;
  free_count++;
}

gs_status gs_buffer_new(gs_device dev, size_t nbytes, gs_buffer **out) {
  const gs_backend *be = gs_device_backend(dev);
  if (!be) return gs_error("no backend for this device");
  void *data = NULL;
  if (nbytes > 0) {
    data = be->alloc(dev.index, nbytes);
    if (!data) {
      /* Free what garbage holds, drop cached blocks, and try once more. */
      if (gs_oom_hook) gs_oom_hook();
      if (be->empty_cache) be->empty_cache(dev.index);
      data = be->alloc(dev.index, nbytes);
    }
    const char *why = !data && be->alloc_failure ? be->alloc_failure(dev.index) : NULL;
    if (why) return gs_error("%s", why);
    if (!data) {
      if (be->count_oom) be->count_oom(dev.index);
      char want[32], freeb[32], total[32], name[16];
      format_bytes((double)nbytes, want, sizeof want);
      if (dev.type == GS_CPU)
        return gs_error_code(GS_ERR_OOM, "CPU out of memory: tried to allocate %s", want);
      gs_mem_stats st = {0};
      be->mem_stats(dev.index, &st);
      format_bytes((double)st.free, freeb, sizeof freeb);
      format_bytes((double)st.total, total, sizeof total);
      gs_device_name(dev, name, sizeof name);
      return gs_error_code(GS_ERR_OOM, "CUDA out of memory. Tried to allocate %s on %s (%s free of %s)",
                           want, name, freeb, total);
    }
  }
  gs_buffer *b = header_alloc();
  if (!b) { be->free(dev.index, data, nbytes); return gs_error_code(GS_ERR_OOM, "out of host memory"); }
  b->refcount = 1;
  b->device = dev;
  b->data = data;
  b->nbytes = nbytes;
  b->version = 0;
  b->writer = NULL;
  b->stream = 0;
  b->nuses = 0;
  b->uses_lost = false;
  b->pinned = false;
  if (be->adopt) be->adopt(b);
  *out = b;
  return GS_OK;
}

void gs_buffer_retain(gs_buffer *b) { b->refcount++; }

void gs_buffer_release(gs_buffer *b) {
  if (!b || --b->refcount > 0) return;
  const gs_backend *be = gs_device_backend(b->device);
  if (b->data && be->release) be->release(b);
  else if (b->data) be->free(b->device.index, b->data, b->nbytes);
  header_free(b);
}

gs_status gs_check_ndim(int64_t ndim) {
  if (ndim < 0 || ndim > GS_MAX_DIMS)
    return gs_error("tensors may have at most %d dimensions, got %lld", GS_MAX_DIMS, (long long)ndim);
  return GS_OK;
}

gs_status gs_check_shape(int ndim, const int64_t *shape, int64_t *numel) {
  GS_TRY(gs_check_ndim(ndim));
  int64_t n = 1, span = 1; /* span: product ignoring zeros, so strides cannot overflow either */
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return gs_error("negative dimension %lld in size at position %d: sizes must be >= 0", (long long)shape[i], i + 1);
    if (shape[i] > 1 && span > INT64_MAX / 16 / shape[i])
      return gs_error("size is too large: the number of elements overflows");
    if (shape[i] > 1) span *= shape[i];
    n *= shape[i];
  }
  if (numel) *numel = n;
  return GS_OK;
}

void gs_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) { stride[i] = s; s *= shape[i] > 1 ? shape[i] : 1; }
}

/* Every field but the shape and stride arrays, which callers fill. */
static gs_tensor *header_new(void) {
  gs_tensor *t = header_alloc();
  if (!t) return NULL;
  t->refcount = 1;
  t->buf = NULL;
  t->dtype = GS_FLOAT32;
  t->ndim = 0;
  t->offset = 0;
  t->requires_grad = false;
  t->is_param = false;
  t->grad = NULL;
  t->grad_fn = NULL;
  t->has_grad_hook = false;
  t->grad_pending = 0;
  t->base = NULL;
  t->view_version = 0;
  t->is_grad = false;
  return t;
}

gs_status gs_tensor_empty(gs_device dev, gs_dtype dt, int ndim, const int64_t *shape, gs_tensor **out) {
  int64_t n;
  GS_TRY(gs_check_shape(ndim, shape, &n));
  GS_TRY(gs_device_resolve(dev, &dev));
  size_t es = gs_dtype_size(dt);
  if ((uint64_t)n > (uint64_t)(SIZE_MAX / 2) / es)
    return gs_error("size is too large: %lld elements", (long long)n);
  gs_tensor *t = header_new();
  if (!t) return gs_error_code(GS_ERR_OOM, "out of host memory");
  gs_status s = gs_buffer_new(dev, (size_t)n * es, &t->buf);
  if (s != GS_OK) { header_free(t); return s; }
  t->dtype = dt;
  t->ndim = ndim;
  if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * ndim);
  gs_contiguous_strides(ndim, shape, t->stride);
  *out = t;
  return GS_OK;
}

gs_status gs_tensor_empty_like(const gs_tensor *x, gs_tensor **out) {
  return gs_tensor_empty(gs_tensor_device(x), x->dtype, x->ndim, x->shape, out);
}

gs_tensor *gs_tensor_view_of(const gs_tensor *x, int ndim, const int64_t *shape, const int64_t *stride, int64_t offset) {
  gs_tensor *t = header_new();
  if (!t) return NULL;
  t->buf = x->buf;
  gs_buffer_retain(x->buf);
  t->dtype = x->dtype;
  t->ndim = ndim;
  if (ndim) {
    memcpy(t->shape, shape, sizeof(int64_t) * ndim);
    memcpy(t->stride, stride, sizeof(int64_t) * ndim);
  }
  t->offset = offset;
  return t;
}

void gs_tensor_retain(gs_tensor *t) { t->refcount++; }

void (*gs_node_release_hook)(struct gs_node *n) = NULL;
void (*gs_node_destroy_hook)(struct gs_node *n) = NULL;

/* Freeing a tensor releases its .grad and grad_fn, a node releases its
 * inputs' nodes and leaves: done recursively, a loss accumulated over
 * 400,000 steps (or a 400,000-long .grad chain) overflows the C stack.
 * Objects whose count reached zero go on a per-thread stack instead, which
 * the outermost release empties; when that stack cannot grow, the object
 * is freed on the spot (recursion, as before). */
typedef struct { void *obj; bool is_node; } dead_obj;
static _Thread_local dead_obj *dead;
static _Thread_local size_t ndead, dead_cap;
static _Thread_local bool draining;

static void destroy(dead_obj d) {
  if (d.is_node) { gs_node_destroy_hook(d.obj); return; }
  gs_tensor *t = d.obj;
  if (t->grad) gs_tensor_release(t->grad);
  if (t->grad_fn) gs_node_release_hook(t->grad_fn);
  if (t->base) gs_tensor_release(t->base);
  gs_buffer_release(t->buf);
  header_free(t);
}

void gs_release_dead(void *obj, bool is_node) {
  dead_obj d = {obj, is_node};
  if (ndead == dead_cap) {
    size_t cap = dead_cap ? dead_cap * 2 : 256;
    dead_obj *grown = realloc(dead, sizeof *grown * cap);
    if (!grown) { destroy(d); return; }
    dead = grown;
    dead_cap = cap;
  }
  dead[ndead++] = d;
  if (draining) return;
  draining = true;
  while (ndead > 0) destroy(dead[--ndead]);
  draining = false;
  if (dead_cap > 4096) { free(dead); dead = NULL; dead_cap = 0; } /* give a big list back */
}

void gs_tensor_release(gs_tensor *t) {
  if (!t || --t->refcount > 0) return;
  gs_release_dead(t, false);
}

int64_t gs_numel(const gs_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

bool gs_is_contiguous(const gs_tensor *t) {
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->stride[i] != s) return false;
    s *= t->shape[i];
  }
  return true;
}

gs_status gs_tensor_host_wait(const gs_tensor *t, const char *what) {
  const gs_backend *be = gs_device_backend(t->buf->device);
  return be && be->host_wait ? be->host_wait(t->buf, what) : GS_OK;
}

bool gs_tensor_host_addressable(const gs_tensor *t) {
  const gs_backend *be = gs_device_backend(t->buf->device);
  return be && be->host_memory;
}

int gs_merge_dims(int nops, const gs_tensor *const *ops, int64_t *shape, int64_t (*stride)[GS_MAX_DIMS]) {
  const gs_tensor *o = ops[0];
  int n = 0;
  for (int d = o->ndim - 1; d >= 0; d--) {
    if (o->shape[d] == 1) continue;
    bool merge = n > 0;
    for (int k = 0; k < nops && merge; k++) merge = ops[k]->stride[d] == stride[k][n - 1] * shape[n - 1];
    if (merge) { shape[n - 1] *= o->shape[d]; continue; }
    shape[n] = o->shape[d];
    for (int k = 0; k < nops; k++) stride[k][n] = ops[k]->stride[d];
    n++;
  }
  if (n == 0) {
    shape[0] = 1;
    for (int k = 0; k < nops; k++) stride[k][0] = 0;
    n = 1;
  }
  return n;
}
