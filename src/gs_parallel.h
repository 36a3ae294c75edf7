/* gs_parallel.h: a small pool of worker threads for the CPU kernels.
 * Workers sleep on a condition variable between jobs instead of spinning
 * (OpenMP's spinning workers stole the cores OpenBLAS's threads needed
 * and cost matrix products a third of their speed). */
#ifndef GS_PARALLEL_H
#define GS_PARALLEL_H
#include <stdint.h>
#include "gs_common.h"

/* The most elements (or units of work) one chunk of a big job should
 * cover: about a millisecond, so Ctrl-C is noticed between chunks. */
#define GS_PARALLEL_BLOCK ((int64_t)1 << 20)

typedef void (*gs_chunk_fn)(int64_t chunk, void *ctx);

/* Runs fn(0..nchunks-1, ctx) across the pool and the calling thread;
 * returns when every chunk is done, or early with gs_interrupted_error()
 * after Ctrl-C (checked before each chunk; see gs_common.h), some chunks
 * then not run. Runs inline for one chunk. */
gs_status gs_parallel_run(int64_t nchunks, gs_chunk_fn fn, void *ctx);
/* Runs body over [0, n) split into contiguous ranges (one per thread, more
 * for big jobs) when `work` (n * cost per item) pays for waking the pool;
 * interrupted like gs_parallel_run. */
typedef void (*gs_range_fn)(int64_t begin, int64_t end, void *ctx);
gs_status gs_parallel_for(int64_t n, int64_t work, gs_range_fn body, void *ctx);
/* Threads the pool uses (GSHELL_NUM_THREADS, else the online CPUs). */
int gs_num_threads(void);

#endif
