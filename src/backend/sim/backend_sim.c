/* backend_sim.c: simulated CUDA devices. Memory is host memory, and the
 * kernels are the CPU's; what this backend adds is device identity: each
 * device keeps its own accounting, an optional cap that produces
 * out-of-memory errors, and copies between memories that are counted.
 *
 * Memory goes through the same caching allocator as a real GPU's
 * (gs_block_pool.c: 512-byte rounding, best fit with splitting and
 * merging, release on empty_cache), so the figures a tutorial prints mean
 * what PyTorch's do. The one difference: a simulated device asks the host
 * for segments of just the size requested, where PyTorch (and the CUDA
 * backend) carve small tensors out of 2 MiB segments, so `reserved` grows
 * by what the tensors hold:
 *   - allocated = bytes in live blocks, reserved = allocated + cached,
 *     peak = the largest `allocated` since reset_peak;
 *   - the cap (GSHELL_SIM_MEM, default 16 GiB) bounds `reserved`: an
 *     allocation that does not fit first releases the cache, then fails.
 * Kernels run asynchronously, as on a real GPU: every slot below checks
 * nothing (the op layer did), packages the CPU kernel as a task and
 * queues it on the device's current stream (sim_queue.h), whose worker
 * runs it on the device's share of the host's cores. Kernel time per
 * device gives torch.cuda.smi() and torch.cuda.utilization() a real
 * utilisation figure. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backend/cpu/backend_cpu.h"
#include "backend/sim/backend_sim.h"
#include "backend/sim/sim_clock.h"
#include "backend/sim/sim_queue.h"
#include "core/gs_alloc_host.h"
#include "core/gs_block_pool.h"
#include "core/gs_gpu_model.h"
#include "core/gs_op_names.h"
#include "core/gs_parallel.h"
#include "core/gs_prof.h"

#define MAX_SIM GS_MAX_CUDA_DEVICES
#define SIM_DEFAULT_TOTAL ((size_t)16 << 30)

typedef struct {
  gs_block_pool pool;
  size_t cap;
  uint64_t n_ooms;                    /* allocations that failed for the user */
  uint64_t util_busy, util_at;        /* kernel time and clock at the last utilisation read */
  bool context_made;                  /* GSHELL_SIM_CONTEXT_MS was paid */
} sim_device;

static sim_device devs[MAX_SIM];
static int ndevs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* configuration and utilisation */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}


/* Segments are host memory, but the device's: taken from the C library,
 * not the host allocator, so they count as device memory (memory_allocated
 * of cuda:i, which paces the Lua collector) and not as the cpu's. 64-byte
 * aligned; blocks inside are 512-aligned relative to it, all a tensor
 * needs. The pool caches them, so no second cache is needed. */
static void *seg_alloc(void *ctx, size_t n) {
  void *p = NULL;
  return posix_memalign(&p, 64, n) == 0 ? p : NULL;
}
/* A cached block may still be in use by work its stream queued (the
 * stream reuses it in order): the memory goes back to the host only once
 * the device has finished everything queued, as cudaFree waits. */
static void seg_free(void *ctx, void *p, size_t n) {
  gs_queue_drain_device((int)((sim_device *)ctx - devs));
  free(p);
}

/* Total memory a simulated device reports: its cap (GSHELL_SIM_MEM), else
 * its GPU model's memory, else ("host") 16 GiB. */
static size_t sim_total(int i) {
  const gs_gpu_model *m = gs_gpu_model_of(i);
  return devs[i].cap ? devs[i].cap : m ? (size_t)m->mem_bytes : SIM_DEFAULT_TOTAL;
}

static int context_ms; /* GSHELL_SIM_CONTEXT_MS: the modelled cost of a device's first use */

int gs_sim_context_ms(void) { return context_ms; }

void gs_sim_configure(int n, size_t cap) {
  static bool ready;
  const char *cm = getenv("GSHELL_SIM_CONTEXT_MS");
  context_ms = cm ? atoi(cm) : 0;
  if (context_ms < 0) context_ms = 0;
  /* the host's cores are divided among the devices, as a GPU has a fixed
   * number of multiprocessors (the cpu device keeps all of them) */
  int cores = gs_host_cores() / (n > 0 ? n : 1);
  gs_queue_configure(n, cores < 1 ? 1 : cores);
  pthread_mutex_lock(&lock);
  uint64_t t = now_ns();
  for (int i = 0; i < MAX_SIM; i++) {
    sim_device *d = &devs[i];
    if (ready) {
      gs_pool_release(&d->pool);
      pthread_mutex_destroy(&d->pool.lock);
      free(d->pool.table); /* no block is live: the caller checked */
    }
    memset(d, 0, sizeof *d);
    d->cap = cap;
    d->util_at = t;
    gs_pool_device dev = {seg_alloc, seg_free, NULL, d, sim_total(i)};
    gs_pool_init(&d->pool, &dev);
  }
  ready = true;
  ndevs = n > MAX_SIM ? MAX_SIM : n;
  pthread_mutex_unlock(&lock);
}


/* The first use of a device creates its context: a real GPU takes a
 * noticeable time here (the chapter's cold-start puzzle), which
 * GSHELL_SIM_CONTEXT_MS models. */
static void make_context(sim_device *d) {
  if (__atomic_load_n(&d->context_made, __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&d->context_made, true, __ATOMIC_RELEASE);
  if (context_ms > 0) {
    struct timespec ts = {context_ms / 1000, (long)(context_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
}

static void *sim_alloc(int i, size_t n) {
  make_context(&devs[i]);
  gs_queue_collect(i);
  void *p = gs_pool_alloc_tagged(&devs[i].pool, n, gs_queue_current(i));
  if (!p) { /* blocks freed while other streams used them may be ready once the device is idle */
    gs_queue_drain_device(i);
    gs_queue_collect(i);
    p = gs_pool_alloc_tagged(&devs[i].pool, n, gs_queue_current(i));
  }
  return p;
}
static void sim_free(int i, void *p, size_t n) { gs_pool_free(&devs[i].pool, p); }
static void pool_free(int i, void *p, int stream) { gs_pool_free(&devs[i].pool, p); }
/* torch.cuda.empty_cache(): the device's cached blocks, and, since a
 * simulated device's memory is the host's, the host allocator's cache too
 * (after the device's queue let go of the host buffers it kept). */
static void sim_empty_cache(int i) {
  gs_queue_drain_device(i);
  gs_queue_collect(i);
  gs_pool_release(&devs[i].pool);
  gs_host_empty_cache();
}

/* A freed buffer's block goes back to its stream's cache at once (that
 * stream's later work is ordered after its users), or, when another
 * stream still has work queued on it, once that work has finished; it
 * stops counting as allocated at once either way. */
static void sim_release(gs_buffer *b) {
  gs_block_pool *pool = &devs[b->device.index].pool;
  if (gs_queue_can_free(b)) {
    gs_pool_free(pool, b->data);
  } else {
    gs_pool_retire(pool, b->data);
    gs_queue_defer_free(b, pool_free);
  }
}
static void sim_adopt(gs_buffer *b) { gs_queue_adopt(b); }

/* One failed allocation (the engine calls this after its retry). */
static void sim_count_oom(int i) { __atomic_add_fetch(&devs[i].n_ooms, 1, __ATOMIC_RELAXED); }

static void sim_mem_stats(int i, gs_mem_stats *s) {
  memset(s, 0, sizeof *s);
  gs_pool_stats st;
  gs_pool_stats_get(&devs[i].pool, &st);
  s->allocated = st.allocated;
  s->max_allocated = st.peak_allocated;
  s->reserved = st.reserved;
  s->max_reserved = st.peak_reserved;
  s->total = sim_total(i);
  s->free = s->total > s->reserved ? s->total - s->reserved : 0;
  s->has_counters = true;
  s->n_alloc = st.n_alloc;
  s->n_free = st.n_free;
  s->n_cache_hits = st.n_cache_hits;
  s->n_alloc_retries = st.n_flushes;
  s->n_ooms = __atomic_load_n(&devs[i].n_ooms, __ATOMIC_RELAXED);
  gs_queue_busy(i, &s->busy_ns, &s->kernels);
}

/* A device never used (its context not made) is skipped without touching
 * its pool, as the CUDA backend skips a GPU whose stream was never made. */
static size_t sim_pool_allocated(int i) {
  if (i < 0 || i >= ndevs || !__atomic_load_n(&devs[i].context_made, __ATOMIC_ACQUIRE)) return 0;
  gs_pool_stats st;
  gs_pool_stats_get(&devs[i].pool, &st);
  return st.allocated;
}

static void sim_reset_peak(int i) { gs_pool_reset_peak(&devs[i].pool); }

/* A modelled device (gs_gpu_model.h) reports its GPU's name with
 * "(simulated)", compute capability and SM count. With "host": compute
 * capability 8.0 (a modern device, so feature checks pass) and one
 * multiprocessor per host core of its share (the cores divided among the
 * devices: its kernels run on that many threads). */
static gs_status sim_properties(int i, gs_device_props *p) {
  memset(p, 0, sizeof *p);
  const gs_gpu_model *m = gs_gpu_model_of(i);
  snprintf(p->name, sizeof p->name, "%s%s", m ? m->name : "gshell simulated GPU", m ? " (simulated)" : "");
  p->total_memory = sim_total(i);
  p->major = m ? m->major : 8;
  p->minor = m ? m->minor : 0;
  p->multi_processor_count = m ? m->sms : gs_queue_cores();
  p->simulated = true;
  return GS_OK;
}

/* Percent of wall time device i spent in kernels since the previous call
 * (or since the devices were configured), as nvidia-smi's GPU-Util is the
 * busy share of its last sampling period. */
static int sim_utilization(int i) {
  pthread_mutex_lock(&lock);
  sim_device *d = &devs[i];
  uint64_t total, kernels;
  gs_queue_busy(i, &total, &kernels);
  uint64_t t = now_ns(), busy = total - d->util_busy, wall = t - d->util_at;
  d->util_busy = total;
  d->util_at = t;
  pthread_mutex_unlock(&lock);
  if (wall == 0) return 0;
  double pct = 100.0 * (double)busy / (double)wall;
  return pct > 100 ? 100 : (int)(pct + 0.5);
}


/* ---- kernels: the CPU's, queued on the device's current stream ---- */

#define X(k) (&t->x[k])

static gs_status run_copy(gs_task *t) { return gs_cpu_copy(X(0), X(1)); }
static gs_status run_fill(gs_task *t) { return gs_cpu_fill(X(0), t->scalar); }
static gs_status run_unary(gs_task *t) { return gs_cpu_unary(t->op, X(0), X(1), t->has_args ? t->args : NULL); }
static gs_status run_binary(gs_task *t) {
  return gs_cpu_binary_flagged(t->op, X(0), X(1), X(2), gs_queue_flag(t->dev));
}
static gs_status run_reduce(gs_task *t) { return gs_cpu_reduce(t->op, X(0), t->flag ? X(2) : NULL, X(1), t->dim); }
static gs_status run_softmax(gs_task *t) { return gs_cpu_softmax(X(0), X(1), t->dim, t->flag); }
static gs_status run_gemm(gs_task *t) { return gs_cpu_gemm(X(0), X(1), X(2)); }
static gs_status run_arange(gs_task *t) { return gs_cpu_arange(X(0), t->args[0], t->args[1]); }
static gs_status run_random(gs_task *t) { return gs_cpu_random(X(0), &t->rnd, t->seed, t->offset); }
static gs_status run_index_select(gs_task *t) {
  return gs_cpu_index_select_flagged(X(0), X(1), t->dim, X(2), gs_queue_flag(t->dev));
}
static gs_status run_index_add(gs_task *t) { return gs_cpu_index_add(X(0), t->dim, X(1), X(2)); }
static gs_status run_check_index(gs_task *t) {
  return gs_cpu_check_index_flagged(X(0), t->size, t->op, gs_queue_flag(t->dev));
}
/* convolution (conv2d) */
static gs_status run_im2col(gs_task *t) { return gs_cpu_im2col(X(0), X(1), &t->conv); }
static gs_status run_col2im(gs_task *t) { return gs_cpu_col2im(X(0), X(1), &t->conv); }
static gs_status run_memcpy(gs_task *t) {
  memcpy(t->dst, t->src, t->size);
  return GS_OK;
}

/* A task for the device of tensor x, on its current stream. */
static gs_task *task(const gs_tensor *x, const char *name, gs_task_fn run) {
  return gs_task_new(x->buf->device.index, name, run);
}
#define NEW_TASK(t, x, name, run)                       \
  gs_task *t = task((x), (name), (run));               \
  if (!t) return GS_ERR_OOM

static gs_status sim_copy(gs_tensor *dst, const gs_tensor *src) {
  NEW_TASK(t, dst, "copy_", run_copy);
  gs_task_tensor(t, dst);
  gs_task_tensor(t, src);
  return gs_task_submit(t);
}
static gs_status sim_fill(gs_tensor *dst, gs_scalar v) {
  NEW_TASK(t, dst, "fill_", run_fill);
  t->scalar = v;
  gs_task_tensor(t, dst);
  return gs_task_submit(t);
}
static gs_status sim_unary(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args) {
  NEW_TASK(t, out, gs_unary_name(op), run_unary);
  t->op = op;
  t->has_args = args != NULL;
  if (args) { t->args[0] = args[0]; t->args[1] = args[1]; }
  gs_task_tensor(t, out);
  gs_task_tensor(t, x);
  t->flops = (uint64_t)gs_numel(out);
  return gs_task_submit(t);
}
static gs_status sim_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b) {
  NEW_TASK(t, out, gs_binary_name(op), run_binary);
  t->op = op;
  gs_task_tensor(t, out);
  gs_task_tensor(t, a);
  gs_task_tensor(t, b);
  t->flops = (uint64_t)gs_numel(out);
  return gs_task_submit(t);
}
static gs_status sim_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim) {
  NEW_TASK(t, x, gs_reduce_name(op), run_reduce);
  t->op = op;
  t->dim = dim;
  t->flag = idx != NULL;
  gs_task_tensor(t, out);
  gs_task_tensor(t, x);
  if (idx) gs_task_tensor(t, idx);
  t->flops = (uint64_t)gs_numel(x);
  return gs_task_submit(t);
}
static gs_status sim_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log) {
  NEW_TASK(t, out, log ? "log_softmax" : "softmax", run_softmax);
  t->dim = dim;
  t->flag = log;
  gs_task_tensor(t, out);
  gs_task_tensor(t, x);
  t->flops = 5 * (uint64_t)gs_numel(x);
  return gs_task_submit(t);
}
static gs_status sim_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b) {
  NEW_TASK(t, c, "mm", run_gemm);
  gs_task_tensor(t, c);
  gs_task_tensor(t, a);
  gs_task_tensor(t, b);
  /* c is [B, M, N], a [B, M, K] */
  t->flops = 2 * (uint64_t)gs_numel(c) * (uint64_t)a->shape[2];
  return gs_task_submit(t);
}
static gs_status sim_arange(gs_tensor *dst, double start, double step) {
  NEW_TASK(t, dst, "arange", run_arange);
  t->args[0] = start;
  t->args[1] = step;
  gs_task_tensor(t, dst);
  return gs_task_submit(t);
}
static gs_status sim_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset) {
  const char *name = r->kind == GS_RAND_NORMAL ? "normal_" : r->kind == GS_RAND_INT ? "random_" : "uniform_";
  NEW_TASK(t, dst, name, run_random);
  t->rnd = *r;
  t->seed = seed;
  t->offset = offset;
  gs_task_tensor(t, dst);
  return gs_task_submit(t);
}
static gs_status sim_index_select(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx) {
  NEW_TASK(t, out, "index_select", run_index_select);
  t->dim = dim;
  gs_task_tensor(t, out);
  gs_task_tensor(t, x);
  gs_task_tensor(t, idx);
  /* it reads the selected slices of x, not all of x (an embedding table) */
  t->bytes = 2 * (uint64_t)gs_numel(out) * gs_dtype_size(out->dtype) + (uint64_t)gs_numel(idx) * gs_dtype_size(idx->dtype);
  return gs_task_submit(t);
}
static gs_status sim_index_add(gs_tensor *out, int dim, const gs_tensor *idx, const gs_tensor *src) {
  NEW_TASK(t, out, "index_add_", run_index_add);
  t->dim = dim;
  gs_task_tensor(t, out);
  gs_task_tensor(t, idx);
  gs_task_tensor(t, src);
  /* reads src, reads and writes the slices of out it adds to: one add each */
  t->bytes = 3 * (uint64_t)gs_numel(src) * gs_dtype_size(src->dtype) + (uint64_t)gs_numel(idx) * gs_dtype_size(idx->dtype);
  t->flops = (uint64_t)gs_numel(src);
  return gs_task_submit(t);
}
static gs_status sim_check_index(const gs_tensor *idx, int64_t size, int code) {
  NEW_TASK(t, idx, gs_devflag_op(code), run_check_index);
  t->check_only = true; /* a bad index marks what is computed from idx, not idx */
  t->size = size;
  t->op = code;
  gs_task_tensor(t, idx);
  return gs_task_submit(t);
}

/* convolution (conv2d): the geometry travels in the task */
static gs_status sim_im2col(gs_tensor *col, const gs_tensor *x, const gs_conv_geom *g) {
  NEW_TASK(t, col, "im2col", run_im2col);
  t->conv = *g;
  gs_task_tensor(t, col);
  gs_task_tensor(t, x);
  return gs_task_submit(t);
}
static gs_status sim_col2im(gs_tensor *x, const gs_tensor *col, const gs_conv_geom *g) {
  NEW_TASK(t, x, "col2im", run_col2im);
  t->conv = *g;
  gs_task_tensor(t, x);
  gs_task_tensor(t, col);
  t->flops = (uint64_t)gs_numel(col); /* it sums the columns into x: one add each */
  return gs_task_submit(t);
}

/* ---- issue 20: pooling, batch norm, resizing (the CPU kernels, queued;
 * the parameter block travels in the task) ---- */

static gs_status run_pool2d(gs_task *t) {
  return gs_cpu_pool2d((const gs_pool2d_params *)t->params, X(0), t->flag ? X(2) : NULL, X(1));
}
static gs_status run_pool2d_backward(gs_task *t) {
  return gs_cpu_pool2d_backward((const gs_pool2d_params *)t->params, X(0), X(1), t->flag ? X(2) : NULL);
}
static gs_status run_bn_stats(gs_task *t) { return gs_cpu_bn_stats(X(0), X(1)); }
static gs_status run_bn_reduce(gs_task *t) { return gs_cpu_bn_reduce(X(0), X(1), X(2), X(3)); }
static gs_status run_bn_elemt(gs_task *t) { return gs_cpu_bn_elemt(X(0), t->flag ? X(3) : NULL, X(1), X(2)); }
static gs_status run_resize(gs_task *t) { return gs_cpu_resize((const gs_resize_params *)t->params, X(0), X(1)); }
static gs_status run_resize_backward(gs_task *t) {
  return gs_cpu_resize_backward((const gs_resize_params *)t->params, X(0), X(1));
}

_Static_assert(sizeof(gs_pool2d_params) <= sizeof(((gs_task *)0)->params), "pool parameters fit a task");
_Static_assert(sizeof(gs_resize_params) <= sizeof(((gs_task *)0)->params), "resize parameters fit a task");

static gs_status sim_pool2d(const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax, const gs_tensor *x) {
  NEW_TASK(t, out, p->kind == GS_POOL_MAX || p->kind == GS_POOL_ADAPTIVE_MAX ? "max_pool2d" : "avg_pool2d",
           run_pool2d);
  memcpy(t->params, p, sizeof *p);
  t->flag = argmax != NULL;
  gs_task_tensor(t, out);
  gs_task_tensor(t, x);
  if (argmax) gs_task_tensor(t, argmax);
  t->flops = (uint64_t)gs_numel(x);
  return gs_task_submit(t);
}
static gs_status sim_pool2d_backward(const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                                     const gs_tensor *argmax) {
  NEW_TASK(t, gx, "pool2d_backward", run_pool2d_backward);
  memcpy(t->params, p, sizeof *p);
  t->flag = argmax != NULL;
  gs_task_tensor(t, gx);
  gs_task_tensor(t, gy);
  if (argmax) gs_task_tensor(t, argmax);
  t->flops = (uint64_t)gs_numel(gx);
  return gs_task_submit(t);
}
static gs_status sim_bn_stats(gs_tensor *stats, const gs_tensor *x) {
  NEW_TASK(t, stats, "batch_norm_stats", run_bn_stats);
  gs_task_tensor(t, stats);
  gs_task_tensor(t, x);
  t->flops = 3 * (uint64_t)gs_numel(x);
  return gs_task_submit(t);
}
static gs_status sim_bn_reduce(gs_tensor *sums, const gs_tensor *gy, const gs_tensor *x, const gs_tensor *mean) {
  NEW_TASK(t, sums, "batch_norm_backward_reduce", run_bn_reduce);
  gs_task_tensor(t, sums);
  gs_task_tensor(t, gy);
  gs_task_tensor(t, x);
  gs_task_tensor(t, mean);
  t->flops = 3 * (uint64_t)gs_numel(x);
  return gs_task_submit(t);
}
static gs_status sim_bn_elemt(gs_tensor *out, const gs_tensor *a, const gs_tensor *x, const gs_tensor *k) {
  NEW_TASK(t, out, a ? "batch_norm_backward_elemt" : "batch_norm_elemt", run_bn_elemt);
  t->flag = a != NULL;
  gs_task_tensor(t, out);
  gs_task_tensor(t, x);
  gs_task_tensor(t, k);
  if (a) gs_task_tensor(t, a);
  t->flops = 4 * (uint64_t)gs_numel(x);
  return gs_task_submit(t);
}
static gs_status sim_resize(const gs_resize_params *p, gs_tensor *out, const gs_tensor *x) {
  NEW_TASK(t, out, p->mode == GS_RESIZE_NEAREST ? "upsample_nearest2d" : "upsample_bilinear2d", run_resize);
  memcpy(t->params, p, sizeof *p);
  gs_task_tensor(t, out);
  gs_task_tensor(t, x);
  t->flops = 4 * (uint64_t)gs_numel(out);
  return gs_task_submit(t);
}
static gs_status sim_resize_backward(const gs_resize_params *p, gs_tensor *gx, const gs_tensor *gy) {
  NEW_TASK(t, gx, p->mode == GS_RESIZE_NEAREST ? "upsample_nearest2d_backward" : "upsample_bilinear2d_backward",
           run_resize_backward);
  memcpy(t->params, p, sizeof *p);
  gs_task_tensor(t, gx);
  gs_task_tensor(t, gy);
  t->flops = 4 * (uint64_t)gs_numel(gy);
  return gs_task_submit(t);
}

/* ---- copies between memories ---- */

/* Host-memory copies (gs_op_copy.c sends every copy between a simulated
 * device and the cpu or another simulated device here):
 *   - to the host: wait for exactly the work that uses the source, then
 *     copy on the calling thread;
 *   - from the host: queued on the destination's current stream; the
 *     host waits for it (the source may change once we return), except
 *     for a non_blocking copy from pinned memory, which returns at once
 *     and keeps the source alive until it ran;
 *   - between two devices: queued on the destination's stream, after an
 *     event on the source's stream (its earlier writes are in), and the
 *     source's stream waits for the copy before its later work (which may
 *     overwrite the source), as PyTorch orders peer copies. */
static gs_status sim_copy_queued(gs_tensor *dst, const gs_tensor *src, bool non_blocking) {
  bool from_host = src->buf->device.type == GS_CPU, to_host = dst->buf->device.type == GS_CPU;
  uint64_t bytes = (uint64_t)gs_numel(src) * gs_dtype_size(src->dtype);
  if (to_host) {
    /* (nothing of dst is written before this wait ends: Ctrl-C may stop it) */
    GS_TRY(gs_buffer_host_wait_before_write(src->buf, "a copy to the host"));
    uint64_t t0 = gs_prof_on() ? gs_prof_clock_ns() : 0;
    int sd = src->buf->device.index;
    const gs_gpu_model *m = gs_gpu_model_of(sd);
    uint64_t r0 = gs_simclock_wait_begin(sd); /* 0 unless the device models a GPU */
    gs_status st = gs_cpu_copy(dst, src);
    /* a modelled GPU: the copy takes its PCIe time, not this one (issue 29) */
    if (r0) gs_simclock_host_copy(sd, bytes, dst->buf->pinned, r0);
    if (t0) {
      gs_prof_event e = {"copy_d2h", GS_PROF_COPY, GS_CUDA, src->buf->device.index, src->buf->stream,
                         t0, gs_prof_clock_ns(), bytes, 0, 0, 0, 0};
      if (m) { /* it ended when the host clock says; it took its modelled time on the engine of copies out */
        uint64_t d = (uint64_t)(gs_gpu_copy_time(m, NULL, GS_COPY_D2H, dst->buf->pinned, (double)bytes) * 1e9 + 0.5);
        e.t0_ns = e.t1_ns > d ? e.t1_ns - d : 0;
        e.modelled = 1;
        e.bound = GS_BOUND_COPY;
      }
      gs_prof_record(&e);
    }
    return st;
  }
  bool async = from_host && non_blocking && src->buf->pinned;
  /* the sync debug mode's check before anything is queued: a refused copy
   * leaves its target as it was */
  if (from_host && !async) GS_TRY(gs_sync_note("a copy to the device"));
  int dev = dst->buf->device.index, ds = gs_queue_current(dev);
  int sdev = from_host ? -1 : src->buf->device.index, ss = from_host ? 0 : gs_queue_current(sdev);
  if (sdev >= 0 && sdev != dev) { /* the source's earlier work first */
    gs_event *e = gs_event_new(false);
    if (!e) return GS_ERR_OOM;
    gs_status st = gs_event_record(e, sdev, ss);
    if (st == GS_OK) st = gs_queue_wait_event(dev, ds, e);
    gs_event_release(e);
    GS_TRY(st);
  }
  NEW_TASK(t, dst, from_host ? "copy_h2d" : "copy_d2d", run_copy);
  t->kind = GS_PROF_COPY;
  gs_task_tensor(t, dst);
  gs_task_tensor(t, src);
  t->bytes = bytes;
  /* the task owns host memory it reads: a non-blocking copy returns at
   * once, and a blocking one's wait may end at a Ctrl-C while the copy
   * still runs (an interrupt stops the host's wait, never the device), so
   * the caller may free its tensor before the copy has read it */
  if (from_host) {
    gs_buffer_retain(src->buf);
    t->keep = src->buf;
  }
  uint64_t seq;
  GS_TRY(gs_task_submit_on(t, ds, &seq));
  if (from_host) return async ? GS_OK : gs_queue_wait_seq(dev, ds, seq, NULL, false); /* (noted above) */
  if (sdev != dev) { /* the source's later work after the copy */
    gs_event *e = gs_event_new(false);
    if (!e) return GS_ERR_OOM;
    gs_status st = gs_event_record(e, dev, ds);
    if (st == GS_OK) st = gs_queue_wait_event(sdev, ss, e);
    gs_event_release(e);
    GS_TRY(st);
  }
  return GS_OK;
}

/* The staged variant's raw copies (specs of the real-GPU path): from the
 * host queued and waited for; to the host and between devices after the
 * devices finished their work. */
static gs_status sim_h2d(int i, void *dst, const void *src, size_t n) {
  gs_task *t = gs_task_new(i, "copy_h2d", run_memcpy);
  if (!t) return GS_ERR_OOM;
  t->kind = GS_PROF_COPY;
  t->dst = dst;
  t->src = src;
  t->size = (int64_t)n;
  t->bytes = n;
  int s = gs_queue_current(i);
  uint64_t seq;
  GS_TRY(gs_task_submit_on(t, s, &seq));
  return gs_queue_wait_seq(i, s, seq, "a copy to the device", false);
}
static gs_status sim_d2h(int i, void *dst, const void *src, size_t n) {
  GS_TRY(gs_queue_sync_device(i, "a copy to the host"));
  memcpy(dst, src, n);
  return GS_OK;
}
static gs_status sim_d2d(int di, void *dst, int si, const void *src, size_t n) {
  gs_queue_drain_device(si);
  gs_queue_drain_device(di);
  memcpy(dst, src, n);
  return GS_OK;
}
/* torch.cuda.synchronize(i): every stream of the device; errors that its
 * kernels found in the data are reported here (gs_devflag.h). */
static gs_status sim_sync(int i) { return gs_queue_sync_device(i, "torch.cuda.synchronize"); }
static gs_status sim_host_wait(gs_buffer *b, const char *what) { return gs_buffer_host_wait(b, what); }

/* The kernel lab (issue 30): the host ran a Lua kernel on the device's
 * memory; this task only carries its modelled time and name onto the
 * stream, so the profiler, events and torch.clock() see it as a kernel,
 * and records its uses of the tensors (the first four as the task's own,
 * the rest as extra uses) so later host reads wait for its modelled end. */
static gs_status run_nothing(gs_task *t) {
  (void)t;
  return GS_OK;
}
static gs_status sim_host_ran(int i, const char *name, double seconds, int bound, const gs_tensor *const *xs,
                              int n) {
  gs_buffer *extra[64];
  if (n - GS_TASK_TENSORS > (int)(sizeof extra / sizeof extra[0]))
    return gs_error("a kernel takes at most %d tensor arguments", GS_TASK_TENSORS + (int)(sizeof extra / sizeof extra[0]));
  gs_task *t = gs_task_new(i, name, run_nothing);
  if (!t) return GS_ERR_OOM;
  for (int k = 0; k < n; k++) {
    if (k < GS_TASK_TENSORS) gs_task_tensor(t, xs[k]);
    else extra[t->nextra++] = xs[k]->buf;
  }
  t->extra = extra;
  t->bytes = 0;
  t->fixed_s = seconds;
  t->bound = (uint8_t)bound;
  return gs_task_submit(t);
}

/* Streams and events (core/gs_streams.h) are the queue's (sim_queue.h).
 * The queue's devices are the configured ones; a device it does not know
 * (none while reconfiguring) has no streams of its own. */
static int sim_streams_count(int dev) { return dev < gs_queue_devices() ? GS_QUEUE_STREAMS : 0; }
static void *sim_event_new(bool timing) { return gs_event_new(timing); }
static void sim_event_release(void *e) { gs_event_release(e); }
static gs_status sim_event_record(void *e, int dev, int stream) { return gs_event_record(e, dev, stream); }
static gs_status sim_event_query(void *e, bool *done) { return gs_event_query(e, done); }
static gs_status sim_event_synchronize(void *e) { return gs_event_synchronize(e); }
static gs_status sim_event_elapsed(void *a, void *b, double *ms) { return gs_event_elapsed(a, b, ms); }
static gs_status sim_event_wait(int dev, int stream, void *e) { return gs_queue_wait_event(dev, stream, e); }
static bool sim_event_recorded(const void *e, int *dev) { return gs_event_recorded(e, dev); }
static const gs_streams sim_streams = {
  .count = sim_streams_count, .current = gs_queue_current, .set_current = gs_queue_set_current,
  .pool_stream = gs_queue_pool_stream, .synchronize = gs_queue_sync_stream, .idle = gs_queue_stream_idle,
  .event_new = sim_event_new, .event_release = sim_event_release, .event_record = sim_event_record,
  .event_query = sim_event_query, .event_synchronize = sim_event_synchronize,
  .event_elapsed = sim_event_elapsed, .event_wait = sim_event_wait, .event_recorded = sim_event_recorded,
};

#define SIM_SLOTS                                                            \
  .configure = gs_sim_configure, .context_ms = gs_sim_context_ms,            \
  .properties = sim_properties, .gpu_model = gs_gpu_model_of,                \
  .utilization = sim_utilization,                                            \
  .alloc = sim_alloc, .free = sim_free, .count_oom = sim_count_oom,          \
  .empty_cache = sim_empty_cache,                                            \
  .mem_stats = sim_mem_stats, .pool_allocated = sim_pool_allocated,          \
  .reset_peak = sim_reset_peak,                                              \
  .memcpy_h2d = sim_h2d, .memcpy_d2h = sim_d2h, .memcpy_d2d = sim_d2d,       \
  .synchronize = sim_sync, .streams = &sim_streams,                         \
  .adopt = sim_adopt, .release = sim_release, .host_wait = sim_host_wait,    \
  .host_ran = sim_host_ran, /* the kernel lab (issue 30) */                  \
  .copy = sim_copy, .fill = sim_fill, .unary = sim_unary, .binary = sim_binary, \
  .reduce = sim_reduce, .softmax = sim_softmax, .gemm = sim_gemm,            \
  .arange = sim_arange, .random = sim_random, .index_select = sim_index_select, \
  .index_add = sim_index_add,                                                \
  .check_index = sim_check_index,                                            \
  .im2col = sim_im2col, .col2im = sim_col2im, /* convolution (conv2d) */     \
  .pool2d = sim_pool2d, .pool2d_backward = sim_pool2d_backward,              \
  .bn_stats = sim_bn_stats, .bn_reduce = sim_bn_reduce, .bn_elemt = sim_bn_elemt, \
  .resize = sim_resize, .resize_backward = sim_resize_backward /* pooling, batch norm, resizing */

const gs_backend gs_backend_sim = {.name = "sim", .host_memory = true, .copy_queued = sim_copy_queued, SIM_SLOTS};
/* The same devices as a real GPU's memory looks to the engine: copies
 * to and from them go through the memcpy slots (and staging where a real
 * GPU needs it), so specs exercise that path on any machine. */
const gs_backend gs_backend_sim_staged = {.name = "sim", .host_memory = false, SIM_SLOTS};
