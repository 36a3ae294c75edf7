/* backend_sim.c: simulated CUDA devices. Memory is host memory, and the
 * kernels are the CPU's; what this backend adds is device identity: each
 * device keeps its own accounting, an optional cap that produces
 * out-of-memory errors, and copies between memories that are counted.
 *
 * Memory follows PyTorch's caching allocator closely enough that the
 * figures a tutorial prints mean the same thing:
 *   - every request is rounded up to a multiple of 512 bytes (PyTorch's
 *     kMinBlockSize), so a 3-element float tensor holds 512 bytes;
 *   - a freed block is not returned: it stays reserved in the device's
 *     free list and is handed out again for the next request of the same
 *     rounded size, until empty_cache() (or an allocation that would
 *     exceed the cap) releases it;
 *   - allocated = bytes in live blocks, reserved = allocated + cached,
 *     peak = the largest `allocated` since reset_peak;
 *   - the cap (GSHELL_SIM_MEM, default 16 GiB) bounds `reserved`: an
 *     allocation that does not fit first releases the cache, then fails.
 * Kernels are timed per device, which gives torch.cuda.smi() and
 * torch.cuda.utilization() a real utilisation figure. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "backend_cpu.h"
#include "backend_sim.h"
#include "gs_alloc_host.h"

#define MAX_SIM 64
#define SIM_BLOCK 512                  /* PyTorch's kMinBlockSize */
#define SIM_DEFAULT_TOTAL ((size_t)16 << 30)
#define NBINS 256                      /* hash buckets of the free list */

/* A cached block keeps its own list link and size in its first bytes
 * (blocks are at least 512 bytes and hold nothing while cached). */
typedef struct cblock { struct cblock *next; size_t size; } cblock;

typedef struct {
  size_t allocated, peak, cached, peak_reserved, cap;
  uint64_t n_alloc, n_free, n_cache_hits, n_cache_flushes, n_ooms;
  uint64_t busy_ns, kernels;          /* time spent in kernels, and their count */
  uint64_t util_busy, util_at;        /* busy_ns and clock at the last utilisation read */
  cblock *bins[NBINS];
} sim_device;

static sim_device devs[MAX_SIM];
static int ndevs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t sim_round(size_t n) { return (n + SIM_BLOCK - 1) / SIM_BLOCK * SIM_BLOCK; }

static unsigned bin_of(size_t rounded) { return (unsigned)((rounded / SIM_BLOCK) % NBINS); }

/* Returns every cached block of device i to the host. Lock held. */
static void flush_cache(int i) {
  sim_device *d = &devs[i];
  for (int b = 0; b < NBINS; b++) {
    cblock *c = d->bins[b];
    while (c) {
      cblock *next = c->next;
      gs_host_free(c, c->size);
      c = next;
    }
    d->bins[b] = NULL;
  }
  d->cached = 0;
}

void gs_sim_configure(int n, size_t cap) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_SIM; i++) flush_cache(i);
  ndevs = n > MAX_SIM ? MAX_SIM : n;
  uint64_t t = now_ns();
  for (int i = 0; i < MAX_SIM; i++) {
    memset(&devs[i], 0, sizeof devs[i]);
    devs[i].cap = cap;
    devs[i].util_at = t;
  }
  pthread_mutex_unlock(&lock);
}

/* Total memory a simulated device reports: its cap, or 16 GiB. */
static size_t sim_total(int i) { return devs[i].cap ? devs[i].cap : SIM_DEFAULT_TOTAL; }

static void *sim_alloc(int i, size_t n) {
  sim_device *d = &devs[i];
  size_t r = sim_round(n);
  pthread_mutex_lock(&lock);
  /* a cached block of the same rounded size? */
  cblock **pp = &d->bins[bin_of(r)];
  while (*pp && (*pp)->size != r) pp = &(*pp)->next;
  void *p = NULL;
  if (*pp) {
    cblock *c = *pp;
    *pp = c->next;
    d->cached -= r;
    d->n_cache_hits++;
    p = c;
  } else {
    /* a fresh block must fit under the cap with what is already reserved;
     * if only the cache is in the way, release it (PyTorch does too) */
    if (d->allocated + d->cached + r > sim_total(i) && d->allocated + r <= sim_total(i)) {
      flush_cache(i);
      d->n_cache_flushes++;
    }
    if (d->allocated + d->cached + r <= sim_total(i)) p = gs_host_alloc(r);
    if (!p) { pthread_mutex_unlock(&lock); return NULL; }
  }
  d->allocated += r;
  d->n_alloc++;
  if (d->allocated > d->peak) d->peak = d->allocated;
  if (d->allocated + d->cached > d->peak_reserved) d->peak_reserved = d->allocated + d->cached;
  pthread_mutex_unlock(&lock);
  return p;
}

/* One failed allocation (the engine calls this after its retry). */
static void sim_count_oom(int i) {
  pthread_mutex_lock(&lock);
  devs[i].n_ooms++;
  pthread_mutex_unlock(&lock);
}

/* The block stays reserved: it goes to the free list, not to the host. */
static void sim_free(int i, void *p, size_t n) {
  if (!p) return;
  sim_device *d = &devs[i];
  size_t r = sim_round(n);
  cblock *c = p;
  pthread_mutex_lock(&lock);
  c->size = r;
  c->next = d->bins[bin_of(r)];
  d->bins[bin_of(r)] = c;
  d->allocated -= r;
  d->cached += r;
  d->n_free++;
  pthread_mutex_unlock(&lock);
}

static void sim_empty_cache(int i) {
  pthread_mutex_lock(&lock);
  flush_cache(i);
  pthread_mutex_unlock(&lock);
}

static void sim_mem_stats(int i, gs_mem_stats *s) {
  memset(s, 0, sizeof *s);
  pthread_mutex_lock(&lock);
  const sim_device *d = &devs[i];
  s->allocated = d->allocated;
  s->max_allocated = d->peak;
  s->reserved = d->allocated + d->cached;
  s->max_reserved = d->peak_reserved;
  s->total = sim_total(i);
  s->free = s->total > s->reserved ? s->total - s->reserved : 0;
  s->has_counters = true;
  s->n_alloc = d->n_alloc;
  s->n_free = d->n_free;
  s->n_cache_hits = d->n_cache_hits;
  s->n_alloc_retries = d->n_cache_flushes;
  s->n_ooms = d->n_ooms;
  s->kernels = d->kernels;
  s->busy_ns = d->busy_ns;
  pthread_mutex_unlock(&lock);
}

static void sim_reset_peak(int i) {
  pthread_mutex_lock(&lock);
  devs[i].peak = devs[i].allocated;
  devs[i].peak_reserved = devs[i].allocated + devs[i].cached;
  pthread_mutex_unlock(&lock);
}

/* Reports compute capability 8.0 (a modern device, so feature checks
 * pass) and one multiprocessor per host core, since it computes there. */
static gs_status sim_properties(int i, gs_device_props *p) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "gshell simulated GPU");
  p->total_memory = sim_total(i);
  p->major = 8;
  p->minor = 0;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  p->multi_processor_count = cores > 0 ? (int)cores : 1;
  p->simulated = true;
  return GS_OK;
}

/* Percent of wall time device i spent in kernels since the previous call
 * (or since the devices were configured), as nvidia-smi's GPU-Util is the
 * busy share of its last sampling period. */
static int sim_utilization(int i) {
  pthread_mutex_lock(&lock);
  sim_device *d = &devs[i];
  uint64_t t = now_ns(), busy = d->busy_ns - d->util_busy, wall = t - d->util_at;
  d->util_busy = d->busy_ns;
  d->util_at = t;
  pthread_mutex_unlock(&lock);
  if (wall == 0) return 0;
  double pct = 100.0 * (double)busy / (double)wall;
  return pct > 100 ? 100 : (int)(pct + 0.5);
}

static gs_status sim_h2d(int i, void *dst, const void *src, size_t n) { memcpy(dst, src, n); return GS_OK; }
static gs_status sim_d2h(int i, void *dst, const void *src, size_t n) { memcpy(dst, src, n); return GS_OK; }
static gs_status sim_d2d(int di, void *dst, int si, const void *src, size_t n) { memcpy(dst, src, n); return GS_OK; }
/* Simulated devices compute synchronously: there is never queued work. */
static gs_status sim_sync(int i) { return GS_OK; }

/* ---- kernels: the CPU's, timed per device ---- */

static void account(const gs_tensor *t, uint64_t t0) {
  int i = t->buf->device.index;
  if (i < 0 || i >= MAX_SIM) return;
  uint64_t dt = now_ns() - t0;
  __atomic_add_fetch(&devs[i].busy_ns, dt, __ATOMIC_RELAXED);
  __atomic_add_fetch(&devs[i].kernels, 1, __ATOMIC_RELAXED);
}

#define TIMED(dev_tensor, call)          \
  do {                                   \
    uint64_t t0_ = now_ns();             \
    gs_status s_ = (call);               \
    account((dev_tensor), t0_);          \
    return s_;                           \
  } while (0)

static gs_status sim_fill(gs_tensor *dst, gs_scalar v) { TIMED(dst, gs_cpu_fill(dst, v)); }
static gs_status sim_unary(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args) {
  TIMED(out, gs_cpu_unary(op, out, x, args));
}
static gs_status sim_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b) {
  TIMED(out, gs_cpu_binary(op, out, a, b));
}
static gs_status sim_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim) {
  TIMED(x, gs_cpu_reduce(op, out, idx, x, dim));
}
static gs_status sim_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log) {
  TIMED(out, gs_cpu_softmax(out, x, dim, log));
}
static gs_status sim_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b) { TIMED(c, gs_cpu_gemm(c, a, b)); }
static gs_status sim_arange(gs_tensor *dst, double start, double step) { TIMED(dst, gs_cpu_arange(dst, start, step)); }
static gs_status sim_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset) {
  TIMED(dst, gs_cpu_random(dst, r, seed, offset));
}
static gs_status sim_index_select(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx) {
  TIMED(out, gs_cpu_index_select(out, x, dim, idx));
}

/* Copies within a device are kernels like the others (timed). Copies
 * between a simulated device and the cpu never reach this table's memcpy
 * slots: host_memory makes them element-by-element CPU copies, so they
 * need no staging buffer (which would distort the memory figures). */
static gs_status sim_copy(gs_tensor *dst, const gs_tensor *src) { TIMED(dst, gs_cpu_copy(dst, src)); }

#define SIM_SLOTS                                                            \
  .properties = sim_properties, .utilization = sim_utilization,              \
  .alloc = sim_alloc, .free = sim_free, .count_oom = sim_count_oom,          \
  .empty_cache = sim_empty_cache,                                            \
  .mem_stats = sim_mem_stats, .reset_peak = sim_reset_peak,                  \
  .memcpy_h2d = sim_h2d, .memcpy_d2h = sim_d2h, .memcpy_d2d = sim_d2d,       \
  .synchronize = sim_sync,                                                   \
  .copy = sim_copy, .fill = sim_fill, .unary = sim_unary, .binary = sim_binary, \
  .reduce = sim_reduce, .softmax = sim_softmax, .gemm = sim_gemm,            \
  .arange = sim_arange, .random = sim_random, .index_select = sim_index_select

const gs_backend gs_backend_sim = {.name = "sim", .host_memory = true, SIM_SLOTS};
/* The same devices as a real GPU's memory looks to the engine: copies
 * to and from them go through the memcpy slots (and staging where a real
 * GPU needs it), so specs exercise that path on any machine. */
const gs_backend gs_backend_sim_staged = {.name = "sim", .host_memory = false, SIM_SLOTS};
