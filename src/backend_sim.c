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
#include "gs_block_pool.h"

#define MAX_SIM 64
#define SIM_DEFAULT_TOTAL ((size_t)16 << 30)

typedef struct {
  gs_block_pool pool;
  gs_devflag flag;                    /* errors in the data, reported at the next sync */
  size_t cap;
  uint64_t n_ooms;                    /* allocations that failed for the user */
  uint64_t busy_ns, kernels;          /* time spent in kernels, and their count */
  uint64_t util_busy, util_at;        /* busy_ns and clock at the last utilisation read */
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
static void seg_free(void *ctx, void *p, size_t n) { free(p); }

/* Total memory a simulated device reports: its cap, or 16 GiB. */
static size_t sim_total(int i) { return devs[i].cap ? devs[i].cap : SIM_DEFAULT_TOTAL; }

void gs_sim_configure(int n, size_t cap) {
  static bool ready;
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


static void *sim_alloc(int i, size_t n) { return gs_pool_alloc(&devs[i].pool, n); }
static void sim_free(int i, void *p, size_t n) { gs_pool_free(&devs[i].pool, p); }
static void sim_empty_cache(int i) { gs_pool_release(&devs[i].pool); }

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
  s->kernels = __atomic_load_n(&devs[i].kernels, __ATOMIC_RELAXED);
  s->busy_ns = __atomic_load_n(&devs[i].busy_ns, __ATOMIC_RELAXED);
}

static void sim_reset_peak(int i) { gs_pool_reset_peak(&devs[i].pool); }

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
static gs_status sim_sync(int i);
/* a copy to the host is a synchronisation: errors found in the data surface here */
static gs_status sim_d2h(int i, void *dst, const void *src, size_t n) { memcpy(dst, src, n); return sim_sync(i); }
static gs_status sim_d2d(int di, void *dst, int si, const void *src, size_t n) { memcpy(dst, src, n); return GS_OK; }
/* Simulated devices compute synchronously, so there is never queued work
 * to wait for; but an error a kernel found in the data is reported here,
 * as a real GPU's is (gs_devflag.h). The engine calls this after every
 * copy from the device to the host, too. */
static gs_status sim_sync(int i) {
  char name[32];
  snprintf(name, sizeof name, "cuda:%d", i);
  return gs_devflag_take(&devs[i].flag, name);
}

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
static gs_devflag *flag_of(const gs_tensor *t) { return &devs[t->buf->device.index].flag; }
static gs_status sim_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b) {
  TIMED(out, gs_cpu_binary_flagged(op, out, a, b, flag_of(out)));
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
  TIMED(out, gs_cpu_index_select_flagged(out, x, dim, idx, flag_of(out)));
}
static gs_status sim_check_index(const gs_tensor *idx, int64_t size, int code) {
  TIMED(idx, gs_cpu_check_index_flagged(idx, size, code, flag_of(idx)));
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
  .arange = sim_arange, .random = sim_random, .index_select = sim_index_select, \
  .check_index = sim_check_index

const gs_backend gs_backend_sim = {.name = "sim", .host_memory = true, SIM_SLOTS};
/* The same devices as a real GPU's memory looks to the engine: copies
 * to and from them go through the memcpy slots (and staging where a real
 * GPU needs it), so specs exercise that path on any machine. */
const gs_backend gs_backend_sim_staged = {.name = "sim", .host_memory = false, SIM_SLOTS};
