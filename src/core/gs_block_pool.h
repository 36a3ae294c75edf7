/* gs_block_pool.h: the caching allocator of device memory, written once
 * for every device kind (the CUDA backend and the simulated GPUs use it
 * with their own raw allocate/free), on the model of PyTorch's:
 *
 *   - requests are rounded up to a multiple of 512 bytes (kMinBlockSize);
 *   - memory comes from the device in segments; a segment is carved into
 *     blocks, and a freed block is merged with free neighbours of its
 *     segment, never given back until release (empty_cache);
 *   - a request takes the smallest cached free block that holds it (best
 *     fit; the lowest address among equals) from its pool: small (up to
 *     1 MiB) or large; what is left over is split off as a free block
 *     when it is worth keeping: 512 bytes or more for the small pool,
 *     more than 1 MiB for the large pool (a smaller remainder stays part
 *     of the block handed out);
 *   - when the device has no room for a new segment, the wholly free
 *     cached segments are released and the device asked once more.
 *
 * How big a segment is made for a request is the device's choice
 * (segment_size): PyTorch carves small requests out of 2 MiB segments and
 * requests up to 10 MiB out of 20 MiB ones (gs_pool_pytorch_segment); the
 * simulated GPUs make each segment just the size asked for, so their
 * figures grow by exactly what the tensors hold.
 *
 * Figures, as PyTorch's: allocated = bytes of blocks in use (rounded, and
 * whole when a remainder was too small to split off); reserved = bytes of
 * all segments; cached = reserved - allocated. Thread-safe (one lock per
 * pool); raw_alloc and raw_free are called with the lock held. */
#ifndef GS_BLOCK_POOL_H
#define GS_BLOCK_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define GS_POOL_MIN_BLOCK ((size_t)512)          /* every block is a multiple of this */
#define GS_POOL_SMALL_SIZE ((size_t)1 << 20)     /* requests up to this are "small" */

typedef struct gs_pblock gs_pblock;

typedef struct {
  /* a new segment of `bytes` from the device, NULL when it has no room */
  void *(*raw_alloc)(void *ctx, size_t bytes);
  void (*raw_free)(void *ctx, void *ptr, size_t bytes);
  /* the segment to make for a request of `rounded` bytes (>= rounded);
   * NULL: exactly rounded */
  size_t (*segment_size)(size_t rounded);
  void *ctx;
  /* reserved may not exceed this (0: no limit): the simulated GPUs' cap */
  size_t limit;
} gs_pool_device;

typedef struct {
  size_t allocated, peak_allocated, reserved, peak_reserved;
  uint64_t n_alloc, n_free;        /* blocks handed out and given back */
  uint64_t n_cache_hits;           /* requests served by a cached block */
  uint64_t n_segments;             /* segments held now */
  uint64_t n_splits, n_merges;
  uint64_t n_flushes;              /* releases forced by a full device */
  uint64_t n_ooms;                 /* requests that failed even after that */
} gs_pool_stats;

typedef struct {
  pthread_mutex_t lock;
  gs_pool_device dev;
  gs_pblock *free_tree[2];          /* free blocks, ordered: [large?] */
  gs_pblock **table;                /* blocks in use, by address (chained hash) */
  size_t table_cap, table_count;
  gs_pool_stats st;
} gs_block_pool;

/* PyTorch's segment sizes: 2 MiB for small requests, 20 MiB for requests
 * below 10 MiB, larger ones rounded up to a multiple of 2 MiB. */
size_t gs_pool_pytorch_segment(size_t rounded);
/* The request rounded up to a multiple of GS_POOL_MIN_BLOCK (at least one). */
size_t gs_pool_round(size_t n);

/* A pool with no memory. Does not allocate. */
void gs_pool_init(gs_block_pool *p, const gs_pool_device *dev);
/* A block of at least n bytes, or NULL when the device has no room even
 * after the cache was released. */
void *gs_pool_alloc(gs_block_pool *p, size_t n);
/* The same for stream `tag` of a device that queues work: a segment
 * belongs to the stream it was made for, and its blocks are reused by
 * that stream only (its later work is ordered after the block's earlier
 * users; another stream's is not), as CUDA's caching allocator does.
 * gs_pool_alloc is tag 0, the default stream. */
void *gs_pool_alloc_tagged(gs_block_pool *p, size_t n, int tag);
/* Gives a block back to the cache (no device call). Unknown pointers and
 * NULL are ignored. */
void gs_pool_free(gs_block_pool *p, void *ptr);
/* The block's user freed it, but it may not be reused yet (another
 * stream's queued work still reads it): it stops counting as allocated
 * now, as PyTorch's free() does, and goes back to the cache at its
 * gs_pool_free. */
void gs_pool_retire(gs_block_pool *p, void *ptr);
/* The size a live block holds (0 for an unknown pointer). */
size_t gs_pool_block_size(gs_block_pool *p, void *ptr);
/* empty_cache: gives every wholly free segment back to the device.
 * Returns the bytes released. */
size_t gs_pool_release(gs_block_pool *p);
void gs_pool_stats_get(gs_block_pool *p, gs_pool_stats *out);
void gs_pool_reset_peak(gs_block_pool *p);
/* Sizes of the free blocks, largest first, up to max of them; returns
 * how many there are (for fragmentation figures and specs). */
size_t gs_pool_free_blocks(gs_block_pool *p, size_t *sizes, size_t max);

#endif
