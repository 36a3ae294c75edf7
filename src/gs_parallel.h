/* gs_parallel.h: a small pool of worker threads for the CPU kernels.
 * Workers sleep on a condition variable between jobs instead of spinning
 * (OpenMP's spinning workers stole the cores OpenBLAS's threads needed
 * and cost matrix products a third of their speed). */
#ifndef GS_PARALLEL_H
#define GS_PARALLEL_H
#include <stdint.h>

typedef void (*gs_chunk_fn)(int64_t chunk, void *ctx);

/* Runs fn(0..nchunks-1, ctx) across the pool and the calling thread;
 * returns when every chunk is done. Runs inline for one chunk. */
void gs_parallel_run(int64_t nchunks, gs_chunk_fn fn, void *ctx);
/* Runs body over [0, n) split into one contiguous range per thread when
 * n * cost_per_item is large enough to pay for waking the pool. */
typedef void (*gs_range_fn)(int64_t begin, int64_t end, void *ctx);
void gs_parallel_for(int64_t n, int64_t work, gs_range_fn body, void *ctx);
/* Threads the pool uses (GSHELL_NUM_THREADS, else the online CPUs). */
int gs_num_threads(void);

#endif
