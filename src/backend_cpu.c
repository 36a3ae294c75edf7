/* backend_cpu.c: the CPU backend's table: host memory from the caching
 * allocator, kernels from cpu_*.c. */
#include <string.h>
#include "backend_cpu.h"
#include "gs_alloc_host.h"

static void *cpu_alloc(int i, size_t n) { return gs_host_alloc(n); }
static void cpu_free(int i, void *p, size_t n) { gs_host_free(p, n); }
static void cpu_empty_cache(int i) { gs_host_empty_cache(); }
static void cpu_mem_stats(int i, gs_mem_stats *s) {
  memset(s, 0, sizeof *s);
  s->allocated = gs_host_bytes_in_use();
  s->reserved = s->allocated + gs_host_bytes_cached();
}
static gs_status cpu_sync(int i) { return GS_OK; }

const gs_backend gs_backend_cpu = {
  .name = "cpu", .host_memory = true,
  .alloc = cpu_alloc, .free = cpu_free, .empty_cache = cpu_empty_cache, .mem_stats = cpu_mem_stats,
  .synchronize = cpu_sync,
  .copy = gs_cpu_copy, .fill = gs_cpu_fill, .unary = gs_cpu_unary, .binary = gs_cpu_binary,
  .reduce = gs_cpu_reduce, .softmax = gs_cpu_softmax, .gemm = gs_cpu_gemm,
  .arange = gs_cpu_arange, .random = gs_cpu_random, .index_select = gs_cpu_index_select, .check_index = gs_cpu_check_index,
};
