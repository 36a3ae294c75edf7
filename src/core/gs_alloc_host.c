/* gs_alloc_host.c: a caching allocator for host memory. Fresh large
 * allocations come from mmap and fault in every page on first touch, which
 * costs more than the arithmetic of an elementwise op; keeping freed blocks
 * in size-class bins lets a loop of large ops reuse warm memory. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core/gs_alloc_host.h"

#define MIN_BLOCK 64          /* the smallest size class */
#define HUGE_PAGE ((size_t)2 << 20)
#define NCLASSES (64 * 4)
/* The default cap on the cache: 4 GiB, or an eighth of the machine's
 * memory when that is less (freed blocks past it go back to the C
 * library at once). gs_host_set_cache_limit changes it. */
#define CACHE_LIMIT_MAX ((size_t)4 << 30)

typedef struct block { struct block *next; } block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block *bins[NCLASSES];
static size_t cached_bytes, in_use_bytes, peak_bytes;
static size_t cache_limit; /* 0 until first needed: default_limit() */

static size_t default_limit(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return CACHE_LIMIT_MAX;
  size_t eighth = (size_t)pages / 8 * (size_t)page;
  return eighth < CACHE_LIMIT_MAX ? eighth : CACHE_LIMIT_MAX;
}

/* The size class of n (n >= 1): four per power of two, so a size is
 * rounded up by less than 25%; its upper bound goes to *rounded (may be
 * NULL). */
static int size_class(size_t n, size_t *rounded) {
  if (n < 4) n = 4;
  int k = 63 - __builtin_clzll((unsigned long long)n); /* 2^k <= n */
  size_t base = (size_t)1 << k, step = base / 4;
  size_t q = (n - base + step - 1) / step;             /* 0..4 */
  if (q == 4) { k++; q = 0; base <<= 1; step <<= 1; }
  if (rounded) *rounded = base + q * step;
  return k * 4 + (int)q;
}

/* The block size of size class c (the inverse of size_class: class
 * k*4+q holds 2^k + q*2^k/4 bytes). */
static size_t class_size(int c) {
  size_t base = (size_t)1 << (c / 4);
  return base + (size_t)(c % 4) * (base / 4);
}

/* Frees cached blocks, biggest size classes first, until at most `keep`
 * bytes stay cached. Called with the lock held. */
static void trim_locked(size_t keep) {
  for (int c = NCLASSES - 1; c >= 0 && cached_bytes > keep; c--) {
    block *b = bins[c];
    while (b && cached_bytes > keep) {
      block *next = b->next;
      free(b);
      b = next;
      cached_bytes -= class_size(c);
    }
    bins[c] = b;
  }
}

/* Blocks are kept by size class: 4 steps per power of two, under 25%
 * waste. */
void *gs_host_alloc(size_t n) {
  if (n < MIN_BLOCK) n = MIN_BLOCK;
  size_t rounded;
  int c = size_class(n, &rounded);
  pthread_mutex_lock(&lock);
  block *b = bins[c];
  if (b) { bins[c] = b->next; cached_bytes -= rounded; }
  pthread_mutex_unlock(&lock);
  if (!b) {
    /* posix_memalign, not aligned_alloc: C11 makes aligned_alloc undefined
     * unless the size is a multiple of the alignment, and the small size
     * classes (80, 96, 112, ...) are not (ASan aborts on them) */
    void *m = NULL;
    size_t align = rounded >= HUGE_PAGE ? HUGE_PAGE : 64;
    if (posix_memalign(&m, align, rounded) != 0) {
      gs_host_empty_cache();
      if (posix_memalign(&m, align, rounded) != 0) m = NULL;
    }
    if (!m) return NULL;
    /* Big blocks ask for transparent huge pages (the kernel's default is
     * often "madvise"): streaming a 64 MiB tensor through 4 KiB pages costs
     * a TLB miss every 4 KiB. Only a hint; failure changes nothing. */
    if (rounded >= HUGE_PAGE) (void)madvise(m, rounded, MADV_HUGEPAGE);
    b = m;
  }
  pthread_mutex_lock(&lock);
  in_use_bytes += rounded;
  if (in_use_bytes > peak_bytes) peak_bytes = in_use_bytes;
  pthread_mutex_unlock(&lock);
  return b;
}

void gs_host_free(void *p, size_t n) {
  if (!p) return;
  if (n < MIN_BLOCK) n = MIN_BLOCK;
  size_t rounded;
  int c = size_class(n, &rounded);
  pthread_mutex_lock(&lock);
  in_use_bytes -= rounded;
  if (!cache_limit) cache_limit = default_limit();
  bool keep = cached_bytes + rounded <= cache_limit;
  if (keep) {
    block *b = p;
    b->next = bins[c];
    bins[c] = b;
    cached_bytes += rounded;
  }
  pthread_mutex_unlock(&lock);
  if (!keep) free(p);
}

void gs_host_empty_cache(void) {
  pthread_mutex_lock(&lock);
  trim_locked(0);
  pthread_mutex_unlock(&lock);
}

size_t gs_host_set_cache_limit(size_t limit) {
  pthread_mutex_lock(&lock);
  size_t old = cache_limit ? cache_limit : default_limit();
  cache_limit = limit ? limit : default_limit();
  trim_locked(cache_limit);
  pthread_mutex_unlock(&lock);
  return old;
}

/* (read under the lock: device workers allocate too) */
size_t gs_host_bytes_in_use(void) {
  pthread_mutex_lock(&lock);
  size_t n = in_use_bytes;
  pthread_mutex_unlock(&lock);
  return n;
}
size_t gs_host_bytes_cached(void) {
  pthread_mutex_lock(&lock);
  size_t n = cached_bytes;
  pthread_mutex_unlock(&lock);
  return n;
}
