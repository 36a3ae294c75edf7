/* gs_block_pool.c: best-fit caching of device memory with splitting and
 * merging (see gs_block_pool.h). Block records live in host memory, so
 * the device memory itself is never touched: the code serves a CUDA
 * device and a simulated one alike. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "core/gs_block_pool.h"

struct gs_pblock {
  char *ptr;
  size_t size;
  gs_pblock *prev, *next;   /* neighbours in the segment, by address */
  gs_pblock *left, *right;  /* the free tree's children, while free */
  gs_pblock *hnext;         /* the in-use table's chain, while in use */
  uint64_t prio;            /* the free tree's heap priority (from ptr) */
  bool free, large;
  bool retired;             /* freed by its user, not yet reusable (gs_pool_retire) */
  int tag;                  /* the stream whose cache it is in */
};

size_t gs_pool_round(size_t n) {
  if (n == 0) n = 1;
  return (n + GS_POOL_MIN_BLOCK - 1) / GS_POOL_MIN_BLOCK * GS_POOL_MIN_BLOCK;
}

size_t gs_pool_pytorch_segment(size_t rounded) {
  const size_t two = (size_t)2 << 20;
  if (rounded <= GS_POOL_SMALL_SIZE) return two;
  if (rounded < ((size_t)10 << 20)) return (size_t)20 << 20;
  return (rounded + two - 1) / two * two;
}

void gs_pool_init(gs_block_pool *p, const gs_pool_device *dev) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->lock, NULL);
  p->dev = *dev;
}

/* ---- free blocks: one ordered tree per pool ----
 * Free blocks are kept in order of (stream, size, address), as PyTorch's
 * std::set of blocks: the best fit for n bytes on a stream is the first
 * block at or after (stream, n, 0), found in O(log blocks) however many
 * blocks of one size are cached. The tree is a treap whose priorities are
 * a hash of the address, so its shape is deterministic. */

static int key_cmp(const gs_pblock *a, int tag, size_t size, const char *ptr) {
  if (a->tag != tag) return a->tag < tag ? -1 : 1;
  if (a->size != size) return a->size < size ? -1 : 1;
  return a->ptr < ptr ? -1 : a->ptr > ptr ? 1 : 0;
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static gs_pblock *tree_join(gs_pblock *a, gs_pblock *b) { /* every key of a < every key of b */
  if (!a) return b;
  if (!b) return a;
  if (a->prio > b->prio) {
    a->right = tree_join(a->right, b);
    return a;
  }
  b->left = tree_join(a, b->left);
  return b;
}

static gs_pblock *tree_insert(gs_pblock *t, gs_pblock *x) {
  if (!t) return x;
  if (x->prio > t->prio) { /* x becomes the root of this subtree: split t around x */
    gs_pblock **l = &x->left, **r = &x->right;
    while (t) {
      if (key_cmp(t, x->tag, x->size, x->ptr) < 0) { *l = t; l = &t->right; t = t->right; }
      else { *r = t; r = &t->left; t = t->left; }
    }
    *l = *r = NULL;
    return x;
  }
  if (key_cmp(x, t->tag, t->size, t->ptr) < 0) t->left = tree_insert(t->left, x);
  else t->right = tree_insert(t->right, x);
  return t;
}

static gs_pblock *tree_remove(gs_pblock *t, gs_pblock *x) {
  if (t == x) return tree_join(x->left, x->right);
  if (key_cmp(x, t->tag, t->size, t->ptr) < 0) t->left = tree_remove(t->left, x);
  else t->right = tree_remove(t->right, x);
  return t;
}

static void bin_insert(gs_block_pool *p, gs_pblock *b) {
  b->left = b->right = NULL;
  b->prio = mix((uint64_t)(uintptr_t)b->ptr);
  p->free_tree[b->large] = tree_insert(p->free_tree[b->large], b);
  b->free = true;
}

static void bin_remove(gs_block_pool *p, gs_pblock *b) {
  p->free_tree[b->large] = tree_remove(p->free_tree[b->large], b);
  b->left = b->right = NULL;
  b->free = false;
}

/* The smallest free block of stream tag's cache that holds n bytes, the
 * lowest-addressed of those: the first key at or after (tag, n, 0). */
static gs_pblock *best_fit(gs_block_pool *p, bool large, size_t n, int tag) {
  gs_pblock *best = NULL;
  for (gs_pblock *t = p->free_tree[large]; t;) {
    if (key_cmp(t, tag, n, NULL) >= 0) { best = t; t = t->left; }
    else t = t->right;
  }
  return best && best->tag == tag ? best : NULL;
}

/* Calls fn on every free block of a tree, in order (fn may not change the
 * tree: it collects). Depth is O(log blocks) in expectation. */
static void tree_each(gs_pblock *t, void (*fn)(gs_pblock *, void *), void *arg) {
  while (t) {
    tree_each(t->left, fn, arg);
    fn(t, arg);
    t = t->right;
  }
}

/* ---- blocks in use, by address ---- */

static size_t slot(const gs_block_pool *p, const void *ptr) {
  uint64_t h = (uint64_t)(uintptr_t)ptr >> 9;
  h *= 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 20) & (p->table_cap - 1);
}

static bool table_grow(gs_block_pool *p) {
  size_t cap = p->table_cap ? p->table_cap * 2 : 1024;
  gs_pblock **t = calloc(cap, sizeof *t);
  if (!t) return p->table_cap > 0; /* a full table still works, with longer chains */
  gs_pblock **old = p->table;
  size_t oldcap = p->table_cap;
  p->table = t;
  p->table_cap = cap;
  for (size_t i = 0; i < oldcap; i++) {
    for (gs_pblock *b = old[i], *nx; b; b = nx) {
      nx = b->hnext;
      size_t s = slot(p, b->ptr);
      b->hnext = t[s];
      t[s] = b;
    }
  }
  free(old);
  return true;
}

static bool table_insert(gs_block_pool *p, gs_pblock *b) {
  if (p->table_count + 1 > p->table_cap && !table_grow(p)) return false;
  size_t s = slot(p, b->ptr);
  b->hnext = p->table[s];
  p->table[s] = b;
  p->table_count++;
  return true;
}

static gs_pblock *table_find(gs_block_pool *p, const void *ptr, bool remove) {
  if (!p->table_cap) return NULL;
  for (gs_pblock **at = &p->table[slot(p, ptr)]; *at; at = &(*at)->hnext) {
    gs_pblock *b = *at;
    if (b->ptr != ptr) continue;
    if (remove) { *at = b->hnext; p->table_count--; b->hnext = NULL; }
    return b;
  }
  return NULL;
}

/* ---- segments ---- */

static void *raw_segment(gs_block_pool *p, size_t bytes) {
  if (!p->dev.raw_alloc || (p->dev.limit && p->st.reserved + bytes > p->dev.limit)) return NULL;
  return p->dev.raw_alloc(p->dev.ctx, bytes);
}

/* Releases every wholly free segment. Lock held. */
static void collect_segment(gs_pblock *b, void *arg) {
  gs_pblock **list = arg;
  if (!b->prev && !b->next) { b->hnext = *list; *list = b; } /* hnext is unused while free */
}

static size_t release_locked(gs_block_pool *p) {
  size_t released = 0;
  for (int l = 0; l < 2; l++) {
    gs_pblock *list = NULL;
    tree_each(p->free_tree[l], collect_segment, &list);
    for (gs_pblock *b = list, *nx; b; b = nx) {
      nx = b->hnext;
      b->hnext = NULL;
      bin_remove(p, b);
      p->dev.raw_free(p->dev.ctx, b->ptr, b->size);
      p->st.reserved -= b->size;
      p->st.n_segments--;
      released += b->size;
      free(b);
    }
  }
  return released;
}

/* A block record for a new segment of the size policy's choosing. */
static gs_pblock *new_segment(gs_block_pool *p, size_t n, bool large) {
  size_t seg = p->dev.segment_size ? p->dev.segment_size(n) : n;
  if (seg < n) seg = n;
  void *mem = raw_segment(p, seg);
  if (!mem && release_locked(p) > 0) { /* cached segments were in the way */
    p->st.n_flushes++;
    mem = raw_segment(p, seg);
  }
  if (!mem) return NULL;
  gs_pblock *b = calloc(1, sizeof *b);
  if (!b) {
    p->dev.raw_free(p->dev.ctx, mem, seg);
    return NULL;
  }
  b->ptr = mem;
  b->size = seg;
  b->large = large;
  p->st.reserved += seg;
  p->st.n_segments++;
  if (p->st.reserved > p->st.peak_reserved) p->st.peak_reserved = p->st.reserved;
  return b;
}

/* Splits off what b holds beyond n when it is worth keeping as a block. */
static void split(gs_block_pool *p, gs_pblock *b, size_t n) {
  size_t rest = b->size - n;
  if (b->large ? rest <= GS_POOL_SMALL_SIZE : rest < GS_POOL_MIN_BLOCK) return;
  gs_pblock *r = calloc(1, sizeof *r);
  if (!r) return; /* no record: the block stays whole */
  r->ptr = b->ptr + n;
  r->size = rest;
  r->large = b->large;
  r->tag = b->tag;
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = n;
  bin_insert(p, r);
  p->st.n_splits++;
}

/* Merges a free block into b (its neighbour), dropping a's record. */
static void absorb(gs_block_pool *p, gs_pblock *b, gs_pblock *a) {
  b->size += a->size;
  b->next = a->next;
  if (a->next) a->next->prev = b;
  free(a);
  p->st.n_merges++;
}

void *gs_pool_alloc(gs_block_pool *p, size_t n) { return gs_pool_alloc_tagged(p, n, 0); }

void *gs_pool_alloc_tagged(gs_block_pool *p, size_t n, int tag) {
  size_t r = gs_pool_round(n);
  bool large = r > GS_POOL_SMALL_SIZE;
  pthread_mutex_lock(&p->lock);
  gs_pblock *b = best_fit(p, large, r, tag);
  if (b) {
    bin_remove(p, b);
    p->st.n_cache_hits++;
  } else if (!(b = new_segment(p, r, large))) {
    p->st.n_ooms++;
    pthread_mutex_unlock(&p->lock);
    return NULL;
  } else {
    b->tag = tag;
  }
  if (!table_insert(p, b)) { /* no host memory to track it: give it back */
    bin_insert(p, b);
    pthread_mutex_unlock(&p->lock);
    return NULL;
  }
  split(p, b, r);
  p->st.allocated += b->size;
  p->st.n_alloc++;
  if (p->st.allocated > p->st.peak_allocated) p->st.peak_allocated = p->st.allocated;
  pthread_mutex_unlock(&p->lock);
  return b->ptr;
}

void gs_pool_free(gs_block_pool *p, void *ptr) {
  if (!ptr) return;
  pthread_mutex_lock(&p->lock);
  gs_pblock *b = table_find(p, ptr, true);
  if (b) {
    if (!b->retired) {
      p->st.allocated -= b->size;
      p->st.n_free++;
    }
    b->retired = false;
    if (b->next && b->next->free) {
      bin_remove(p, b->next);
      absorb(p, b, b->next);
    }
    if (b->prev && b->prev->free) {
      gs_pblock *pv = b->prev;
      bin_remove(p, pv);
      absorb(p, pv, b);
      b = pv;
    }
    bin_insert(p, b);
  }
  pthread_mutex_unlock(&p->lock);
}

void gs_pool_retire(gs_block_pool *p, void *ptr) {
  if (!ptr) return;
  pthread_mutex_lock(&p->lock);
  gs_pblock *b = table_find(p, ptr, false);
  if (b && !b->retired) {
    b->retired = true;
    p->st.allocated -= b->size;
    p->st.n_free++;
  }
  pthread_mutex_unlock(&p->lock);
}

size_t gs_pool_block_size(gs_block_pool *p, void *ptr) {
  pthread_mutex_lock(&p->lock);
  gs_pblock *b = table_find(p, ptr, false);
  size_t n = b ? b->size : 0;
  pthread_mutex_unlock(&p->lock);
  return n;
}

size_t gs_pool_release(gs_block_pool *p) {
  pthread_mutex_lock(&p->lock);
  size_t n = release_locked(p);
  pthread_mutex_unlock(&p->lock);
  return n;
}

void gs_pool_stats_get(gs_block_pool *p, gs_pool_stats *out) {
  pthread_mutex_lock(&p->lock);
  *out = p->st;
  pthread_mutex_unlock(&p->lock);
}

void gs_pool_reset_peak(gs_block_pool *p) {
  pthread_mutex_lock(&p->lock);
  p->st.peak_allocated = p->st.allocated;
  p->st.peak_reserved = p->st.reserved;
  pthread_mutex_unlock(&p->lock);
}

static int by_size_desc(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

typedef struct { size_t *all, count; } size_list;

static void count_block(gs_pblock *b, void *arg) {
  size_list *l = arg;
  (void)b;
  l->count++;
}

static void list_block(gs_pblock *b, void *arg) {
  size_list *l = arg;
  l->all[l->count++] = b->size;
}

size_t gs_pool_free_blocks(gs_block_pool *p, size_t *sizes, size_t max) {
  pthread_mutex_lock(&p->lock);
  size_list l = {NULL, 0};
  for (int k = 0; k < 2; k++) tree_each(p->free_tree[k], count_block, &l);
  size_t count = l.count;
  if (count && (l.all = malloc(count * sizeof *l.all))) {
    l.count = 0;
    for (int k = 0; k < 2; k++) tree_each(p->free_tree[k], list_block, &l);
    qsort(l.all, l.count, sizeof *l.all, by_size_desc);
    for (size_t i = 0; i < l.count && i < max; i++) sizes[i] = l.all[i];
    free(l.all);
  }
  pthread_mutex_unlock(&p->lock);
  return count;
}
