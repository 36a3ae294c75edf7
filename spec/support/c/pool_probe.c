/* pool_probe.c: drives gs_block_pool.c for spec/block_pool_spec.lua.
 * Reads commands from stdin, one per line, and answers on stdout:
 *   pytorch            use PyTorch's segment sizes (default: as asked)
 *   limit BYTES        cap on reserved bytes
 *   alloc NAME BYTES   -> "NAME OFFSET SIZE" (offset from its segment's
 *                         start), or "NAME failed"
 *   alloc_on TAG NAME BYTES  the same for stream TAG's cache
 *   free NAME          (checks the block still holds what was written at
 *                       its alloc: "error: ..." if another block overlapped)
 *   free_total         -> "free_total COUNT BYTES" of every free block
 *   retire NAME        freed by its user, not yet reusable (gs_pool_retire)
 *   release            -> "released BYTES"
 *   stats              -> "allocated A reserved R segments S hits H splits P merges M flushes F ooms O"
 *   free_blocks        -> "free B1 B2 ..." (largest first)
 *   raw                -> "raw_live N" segments the device still holds
 * Segments come from malloc, so ASan sees any overrun of the pool. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gs_block_pool.h"

#define MAXN 256
static struct { char name[64]; char *ptr; size_t n; unsigned char fill; } named[MAXN];
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
    int tag = 0;
    if (sscanf(line, "alloc_on %d %63s %zu", &tag, b, &n) == 3 || sscanf(line, "alloc %63s %zu", b, &n) == 2) {
      if (nnamed == MAXN) { printf("error: more than %d live blocks\n", MAXN); continue; }
      char *p = gs_pool_alloc_tagged(&pool, n, tag);
      if (!p) { printf("%s failed\n", b); continue; }
      static unsigned char fills;
      unsigned char fill = (unsigned char)(++fills | 1);
      memset(p, fill, n); /* the block must really hold n bytes */
      snprintf(named[nnamed].name, sizeof named[nnamed].name, "%s", b);
      named[nnamed].n = n;
      named[nnamed].fill = fill;
      named[nnamed++].ptr = p;
      printf("%s %ld %zu\n", b, offset_of(p), gs_pool_block_size(&pool, p));
    } else if (strcmp(a, "free_blocks") == 0) {
      size_t sizes[64];
      size_t k = gs_pool_free_blocks(&pool, sizes, 64);
      printf("free");
      for (size_t i = 0; i < k && i < 64; i++) printf(" %zu", sizes[i]);
      printf("\n");
    } else if (strcmp(a, "free_total") == 0) {
      size_t count = gs_pool_free_blocks(&pool, NULL, 0), total = 0;
      size_t *sizes = malloc((count + 1) * sizeof *sizes);
      size_t k = gs_pool_free_blocks(&pool, sizes, count);
      for (size_t i = 0; i < k && i < count; i++) total += sizes[i];
      printf("free_total %zu %zu\n", count, total);
      free(sizes);
    } else if (sscanf(line, "retire %63s", b) == 1) {
      for (int i = 0; i < nnamed; i++)
        if (strcmp(named[i].name, b) == 0) gs_pool_retire(&pool, named[i].ptr);
    } else if (sscanf(line, "free %63s", b) == 1) {
      for (int i = 0; i < nnamed; i++)
        if (strcmp(named[i].name, b) == 0) {
          /* blocks start on 512-byte boundaries, so an overlapping block wrote
           * at least one byte at a multiple of 512 from this one's start */
          for (size_t k = 0; k < named[i].n; k += 512)
            if ((unsigned char)named[i].ptr[k] != named[i].fill) {
              printf("error: block %s was overwritten at byte %zu (another block overlaps it)\n", b, k);
              break;
            }
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
