/* gs_parallel.h: sets of worker threads for the CPU kernels.
 * The CPU device uses the global set (all the host's cores); each
 * simulated device gets a set of its own, its share of the cores, so two
 * devices really compute at the same time as two GPUs would. A thread
 * binds a set (gs_workers_bind) and from then on its gs_parallel_run,
 * gs_parallel_for and matrix products use that set's threads.
 * Workers watch for a job for 200 microseconds after the last one (and a
 * caller for the workers' last chunks, 500), then sleep on a condition
 * variable: back-to-back ops find them awake, and an idle set leaves the
 * cores free (OpenMP's long spin stole the cores OpenBLAS's threads
 * needed when both ran; OpenBLAS now runs single-threaded inside ours). */
#ifndef GS_PARALLEL_H
#define GS_PARALLEL_H
#include <stdint.h>
#include "core/gs_common.h"

/* The most elements (or units of work) one chunk of a big job should
 * cover: about a millisecond, so Ctrl-C is noticed between chunks. */
#define GS_PARALLEL_BLOCK ((int64_t)1 << 20)

typedef struct gs_workers gs_workers;

/* A set of nthreads threads, counting the thread that binds it (1: jobs
 * run inline on that thread, no extra threads are started); the others
 * start now and sleep until a job comes. NULL on failure (no memory, no
 * threads). A set runs one job at a time: a second thread calling into a
 * set that is busy runs its job inline. */
gs_workers *gs_workers_create(int nthreads);
/* Stops and frees a set; no thread may have it bound or be running a job
 * on it. NULL is ignored. */
void gs_workers_destroy(gs_workers *w);
/* The calling thread's jobs use w from now on; NULL: the global set of
 * all the host's cores (what every thread starts with). */
void gs_workers_bind(gs_workers *w);
/* The calling thread's bound set (NULL: the global one). */
gs_workers *gs_workers_bound(void);
/* Threads of the set bound to the calling thread. */
int gs_num_threads(void);
/* The host's cores: GSHELL_NUM_THREADS when set, else the online CPUs
 * (the global set's size). */
int gs_host_cores(void);

typedef void (*gs_chunk_fn)(int64_t chunk, void *ctx);

/* Runs fn(0..nchunks-1, ctx) across the bound set's threads and the
 * calling thread; returns when every chunk is done, or early with
 * gs_interrupted_error() after Ctrl-C (checked before each chunk; see
 * gs_common.h), some chunks then not run. Runs inline for one chunk, and
 * when called from inside a chunk. */
gs_status gs_parallel_run(int64_t nchunks, gs_chunk_fn fn, void *ctx);
/* Runs body over [0, n) split into contiguous ranges (one per thread, more
 * for big jobs) when `work` (n * cost per item) pays for waking the pool;
 * interrupted like gs_parallel_run. */
typedef void (*gs_range_fn)(int64_t begin, int64_t end, void *ctx);
gs_status gs_parallel_for(int64_t n, int64_t work, gs_range_fn body, void *ctx);

#endif
