/* cpu_iter.c: the N-d strided iteration behind every CPU elementwise op. */
#include <string.h>
#include "backend/cpu/cpu_iter.h"
#include "core/gs_parallel.h"

typedef struct {
  int nops, ndim;                       /* dims innermost first */
  int64_t shape[GS_MAX_DIMS];
  int64_t stride[GS_ITER_MAX_OPS][GS_MAX_DIMS]; /* bytes */
  char *base[GS_ITER_MAX_OPS];
} iter;

/* The coalesced shape (gs_merge_dims), strides turned into bytes. */
static void iter_build(iter *it, int nops, const gs_tensor *const *ops) {
  it->nops = nops;
  it->ndim = gs_merge_dims(nops, ops, it->shape, it->stride);
  for (int k = 0; k < nops; k++) {
    it->base[k] = gs_tensor_ptr(ops[k]);
    int64_t es = (int64_t)gs_dtype_size(ops[k]->dtype);
    for (int d = 0; d < it->ndim; d++) it->stride[k][d] *= es;
  }
}

/* Runs elements [begin, end) in row-major order of the coalesced shape. */
static void iter_run(const iter *it, int64_t begin, int64_t end, gs_loop_fn fn, void *ctx) {
  int64_t coord[GS_MAX_DIMS];
  int64_t rem = begin;
  char *ptr[GS_ITER_MAX_OPS];
  for (int k = 0; k < it->nops; k++) ptr[k] = it->base[k];
  for (int d = 0; d < it->ndim; d++) {
    coord[d] = rem % it->shape[d];
    rem /= it->shape[d];
    for (int k = 0; k < it->nops; k++) ptr[k] += coord[d] * it->stride[k][d];
  }
  int64_t inner[GS_ITER_MAX_OPS];
  for (int k = 0; k < it->nops; k++) inner[k] = it->stride[k][0];
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = it->shape[0] - coord[0];
    if (n > end - pos) n = end - pos;
    fn(ptr, inner, n, ctx);
    pos += n;
    if (pos >= end) break;
    /* advance: inner dim wraps to 0, carry outward */
    for (int k = 0; k < it->nops; k++) ptr[k] += (it->shape[0] - coord[0]) * inner[k];
    for (int k = 0; k < it->nops; k++) ptr[k] -= it->shape[0] * inner[k];
    coord[0] = 0;
    for (int d = 1; d < it->ndim; d++) {
      coord[d]++;
      for (int k = 0; k < it->nops; k++) ptr[k] += it->stride[k][d];
      if (coord[d] < it->shape[d]) break;
      for (int k = 0; k < it->nops; k++) ptr[k] -= coord[d] * it->stride[k][d];
      coord[d] = 0;
    }
  }
}

typedef struct { const iter *it; int64_t total, chunks; gs_loop_fn fn; void *ctx; } split;

static void run_chunk(int64_t c, void *arg) {
  const split *sp = arg;
  /* split on 64-element boundaries so threads never share a cache line */
  int64_t b = (sp->total * c / sp->chunks) & ~(int64_t)63;
  int64_t e = c + 1 == sp->chunks ? sp->total : (sp->total * (c + 1) / sp->chunks) & ~(int64_t)63;
  iter_run(sp->it, b, e, sp->fn, sp->ctx);
}

gs_status gs_cpu_foreach(int nops, const gs_tensor *const *ops, gs_loop_fn fn, void *ctx, bool serial) {
  int64_t total = gs_numel(ops[0]);
  if (total == 0) return GS_OK;
  iter it;
  iter_build(&it, nops, ops);
  if (total < GS_PARALLEL_GRAIN) { /* small: one run, nothing else to pay for */
    iter_run(&it, 0, total, fn, ctx);
    return GS_OK;
  }
  if (serial) { /* in blocks, for Ctrl-C */
    bool poll = gs_interruptible();
    for (int64_t b = 0; b < total; b += GS_PARALLEL_BLOCK) {
      if (poll && gs_interrupted) return gs_interrupted_error();
      iter_run(&it, b, total - b < GS_PARALLEL_BLOCK ? total : b + GS_PARALLEL_BLOCK, fn, ctx);
    }
    return GS_OK;
  }
  int64_t chunks = total / (GS_PARALLEL_GRAIN / 2), nt = gs_num_threads();
  if (chunks > nt) chunks = nt;
  /* and at most GS_PARALLEL_BLOCK elements each, so Ctrl-C is noticed */
  if ((total + GS_PARALLEL_BLOCK - 1) / GS_PARALLEL_BLOCK > chunks) chunks = (total + GS_PARALLEL_BLOCK - 1) / GS_PARALLEL_BLOCK;
  split sp = {&it, total, chunks, fn, ctx};
  return gs_parallel_run(chunks, run_chunk, &sp);
}
