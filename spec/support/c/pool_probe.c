/* pool_probe.c: drives gs_block_pool.c for spec/block_pool_spec.lua.
 * Reads commands from stdin, one per line, and answers on stdout:
 *   pytorch            use PyTorch's segment sizes (default: as asked)
 *   limit BYTES        cap on reserved bytes
 *   alloc NAME BYTES   -> "NAME OFFSET SIZE" (offset from its segment's
 *                         start), or "NAME failed"
 *   free NAME
 *   release            -> "released BYTES"
 *   stats              -> "allocated A reserved R segments S hits H splits P merges M flushes F ooms O"
 *   free_blocks        -> "free B1 B2 ..." (largest first)
 *   raw                -> "raw_live N" segments the device still holds
 * Segments come from malloc, so ASan sees any overrun of the pool. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gs_block_pool.h"

#define MAXN 256
static struct { char name[64]; char *ptr; } named[MAXN];
static int nnamed;
static long raw_live;
static char *seg_base[4096];
static size_t seg_len[4096];
static int nseg;

static void *raw_alloc(void *ctx, size_t n) {
  char *p = malloc(n);
  if (p && nseg < 4096) { seg_base[nseg] = p; seg_len[nseg++] = n; raw_live++; }
  return p;
}
static void raw_free(void *ctx, void *p, size_t n) {
  for (int i = 0; i < nseg; i++)
    if (seg_base[i] == p) {
      if (seg_len[i] != n) printf("error: segment freed with size %zu, made with %zu\n", n, seg_len[i]);
      seg_base[i] = seg_base[--nseg];
      seg_len[i] = seg_len[nseg];
      raw_live--;
      free(p);
      return;
    }
  printf("error: raw_free of an unknown segment\n");
}

/* The offset of p from the start of the segment holding it. */
static long offset_of(const char *p) {
  for (int i = 0; i < nseg; i++)
    if (p >= seg_base[i] && p < seg_base[i] + seg_len[i]) return (long)(p - seg_base[i]);
  return -1;
}

int main(void) {
  gs_pool_device dev = {raw_alloc, raw_free, NULL, NULL, 0};
  gs_block_pool pool;
  char line[256], a[64], b[64];
  bool ready = false;
  while (fgets(line, sizeof line, stdin)) {
    if (sscanf(line, "%63s", a) != 1) continue;
    if (!ready && strcmp(a, "pytorch") == 0) { dev.segment_size = gs_pool_pytorch_segment; continue; }
    if (!ready && sscanf(line, "limit %zu", &dev.limit) == 1) continue;
    if (!ready) { gs_pool_init(&pool, &dev); ready = true; }
    size_t n;
    if (sscanf(line, "alloc %63s %zu", b, &n) == 2) {
      char *p = gs_pool_alloc(&pool, n);
      if (!p) { printf("%s failed\n", b); continue; }
      memset(p, 0xab, n); /* the block must really hold n bytes */
      snprintf(named[nnamed].name, sizeof named[nnamed].name, "%s", b);
      named[nnamed++].ptr = p;
      printf("%s %ld %zu\n", b, offset_of(p), gs_pool_block_size(&pool, p));
    } else if (strcmp(a, "free_blocks") == 0) {
      size_t sizes[64];
      size_t k = gs_pool_free_blocks(&pool, sizes, 64);
      printf("free");
      for (size_t i = 0; i < k && i < 64; i++) printf(" %zu", sizes[i]);
      printf("\n");
    } else if (sscanf(line, "free %63s", b) == 1) {
      for (int i = 0; i < nnamed; i++)
        if (strcmp(named[i].name, b) == 0) {
          gs_pool_free(&pool, named[i].ptr);
          named[i] = named[--nnamed];
          break;
        }
    } else if (strcmp(a, "release") == 0) {
      printf("released %zu\n", gs_pool_release(&pool));
    } else if (strcmp(a, "stats") == 0) {
      gs_pool_stats s;
      gs_pool_stats_get(&pool, &s);
      printf("allocated %zu reserved %zu segments %llu hits %llu splits %llu merges %llu flushes %llu ooms %llu\n",
             s.allocated, s.reserved, (unsigned long long)s.n_segments, (unsigned long long)s.n_cache_hits,
             (unsigned long long)s.n_splits, (unsigned long long)s.n_merges, (unsigned long long)s.n_flushes,
             (unsigned long long)s.n_ooms);
    } else if (strcmp(a, "raw") == 0) {
      printf("raw_live %ld\n", raw_live);
    }
    fflush(stdout);
  }
  /* everything back: no leak for the sanitizer to find */
  for (int i = 0; i < nnamed; i++) gs_pool_free(&pool, named[i].ptr);
  if (ready) {
    gs_pool_release(&pool);
    free(pool.table);
  }
  return 0;
}
