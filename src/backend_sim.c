/* backend_sim.c: simulated CUDA devices. Memory is host memory, and the
 * kernels are the CPU's; what this backend adds is device identity: each
 * device keeps its own accounting, an optional cap that produces
 * out-of-memory errors, and copies between memories that are counted. */
#include <stdlib.h>
#include <string.h>
#include "backend_cpu.h"
#include "gs_alloc_host.h"

#define MAX_SIM 64

typedef struct { size_t allocated, peak, cap; } sim_device;
static sim_device devs[MAX_SIM];
static int ndevs;

void gs_sim_configure(int n, size_t cap) {
  ndevs = n > MAX_SIM ? MAX_SIM : n;
  for (int i = 0; i < MAX_SIM; i++) {
    devs[i].cap = cap;
    devs[i].allocated = devs[i].peak = 0;
  }
}

/* Total memory a simulated device reports: its cap, or 16 GiB. */
static size_t sim_total(int i) { return devs[i].cap ? devs[i].cap : (size_t)16 << 30; }

static void *sim_alloc(int i, size_t n) {
  sim_device *d = &devs[i];
  if (d->allocated + n > sim_total(i)) return NULL;
  void *p = gs_host_alloc(n);
  if (!p) return NULL;
  d->allocated += n;
  if (d->allocated > d->peak) d->peak = d->allocated;
  return p;
}

static void sim_free(int i, void *p, size_t n) {
  gs_host_free(p, n);
  devs[i].allocated -= n;
}

static void sim_empty_cache(int i) { (void)i; }

static void sim_mem_stats(int i, gs_mem_stats *s) {
  s->allocated = devs[i].allocated;
  s->max_allocated = devs[i].peak;
  s->reserved = devs[i].allocated;
  s->total = sim_total(i);
  s->free = s->total - devs[i].allocated;
}

static void sim_reset_peak(int i) { devs[i].peak = devs[i].allocated; }

static gs_status sim_h2d(int i, void *dst, const void *src, size_t n) { memcpy(dst, src, n); return GS_OK; }
static gs_status sim_d2h(int i, void *dst, const void *src, size_t n) { memcpy(dst, src, n); return GS_OK; }
static gs_status sim_d2d(int di, void *dst, int si, const void *src, size_t n) { memcpy(dst, src, n); return GS_OK; }
static gs_status sim_sync(int i) { return GS_OK; }

const gs_backend gs_backend_sim = {
  .name = "sim",
  .alloc = sim_alloc, .free = sim_free, .empty_cache = sim_empty_cache,
  .mem_stats = sim_mem_stats, .reset_peak = sim_reset_peak,
  .memcpy_h2d = sim_h2d, .memcpy_d2h = sim_d2h, .memcpy_d2d = sim_d2d,
  .synchronize = sim_sync,
  .copy = gs_cpu_copy, .fill = gs_cpu_fill, .unary = gs_cpu_unary, .binary = gs_cpu_binary,
  .reduce = gs_cpu_reduce, .softmax = gs_cpu_softmax, .gemm = gs_cpu_gemm,
  .arange = gs_cpu_arange, .random = gs_cpu_random, .index_select = gs_cpu_index_select,
};
