/* gs_parallel.c: the worker pool behind gs_parallel_run. One job at a
 * time: the caller publishes it under the lock, wakes the workers, takes
 * chunks itself from a shared atomic counter, then waits for the last
 * worker to finish. Workers are created on first use. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#include "gs_parallel.h"

#define GS_PARALLEL_WORK 131072

#define MAX_WORKERS 63

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int nthreads = 1;
static _Atomic uint64_t generation;   /* bumped for each job */
static gs_chunk_fn job_fn;
static void *job_ctx;
static int64_t job_chunks;
static atomic_int_fast64_t next_chunk;
static bool job_poll;                 /* the job may stop at Ctrl-C (gs_common.h) */
static atomic_bool job_stopped;       /* and did: some chunks were skipped */
static int busy_workers;              /* workers still inside the current job */
static _Thread_local bool in_pool;    /* nested calls run inline */

static void take_chunks(void) {
  for (;;) {
    if (job_poll && gs_interrupted) { atomic_store(&job_stopped, true); return; }
    int64_t c = atomic_fetch_add(&next_chunk, 1);
    if (c >= job_chunks) return;
    job_fn(c, job_ctx);
  }
}

/* After a job a worker watches for the next one for a few microseconds
 * (300 pauses) before sleeping: back-to-back ops find it awake (no wake-up latency),
 * while a long pause (an OpenBLAS call, the user typing) leaves the core
 * free, unlike OpenMP's long spin. */
#define SPIN_ROUNDS 300

static void *worker(void *arg) {
  (void)arg;
  in_pool = true;
  uint64_t seen = 0;
  pthread_mutex_lock(&lock);
  for (;;) {
    if (atomic_load(&generation) == seen) {
      pthread_mutex_unlock(&lock);
      for (int k = 0; k < SPIN_ROUNDS && atomic_load(&generation) == seen; k++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      pthread_mutex_lock(&lock);
    }
    while (atomic_load(&generation) == seen) pthread_cond_wait(&wake, &lock);
    seen = generation;
    pthread_mutex_unlock(&lock);
    take_chunks();
    pthread_mutex_lock(&lock);
    if (--busy_workers == 0) pthread_cond_signal(&done);
  }
  return NULL;
}

static void start(void) {
  const char *env = getenv("GSHELL_NUM_THREADS");
  long n = env ? atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > MAX_WORKERS + 1) n = MAX_WORKERS + 1;
  nthreads = (int)n;
  for (int i = 0; i < nthreads - 1; i++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, worker, NULL) != 0) { nthreads = i + 1; pthread_attr_destroy(&attr); break; }
    pthread_attr_destroy(&attr);
  }
}

int gs_num_threads(void) {
  pthread_once(&once, start);
  return nthreads;
}

gs_status gs_parallel_run(int64_t nchunks, gs_chunk_fn fn, void *ctx) {
  if (nchunks <= 0) return GS_OK;
  /* a nested call runs inside a chunk of the outer job, which polls */
  bool poll = !in_pool && gs_interruptible();
  if (nchunks == 1 || in_pool || gs_num_threads() == 1) {
    for (int64_t c = 0; c < nchunks; c++) {
      if (poll && gs_interrupted) return gs_interrupted_error();
      fn(c, ctx);
    }
    return GS_OK;
  }
  pthread_mutex_lock(&lock);
  job_fn = fn;
  job_ctx = ctx;
  job_chunks = nchunks;
  job_poll = poll;
  atomic_store(&job_stopped, false);
  atomic_store(&next_chunk, 0);
  busy_workers = nthreads - 1;
  generation++;
  pthread_cond_broadcast(&wake);
  pthread_mutex_unlock(&lock);
  in_pool = true;
  take_chunks();
  in_pool = false;
  pthread_mutex_lock(&lock);
  while (busy_workers > 0) pthread_cond_wait(&done, &lock);
  pthread_mutex_unlock(&lock);
  return atomic_load(&job_stopped) ? gs_interrupted_error() : GS_OK;
}

typedef struct { int64_t n, parts; gs_range_fn body; void *ctx; } range_job;

static void range_chunk(int64_t c, void *arg) {
  range_job *j = arg;
  j->body(j->n * c / j->parts, j->n * (c + 1) / j->parts, j->ctx);
}

gs_status gs_parallel_for(int64_t n, int64_t work, gs_range_fn body, void *ctx) {
  if (n <= 0) return GS_OK;
  /* waking a sleeping worker costs tens of microseconds: below this much
   * work (about 128k elementwise operations) one thread is faster */
  int64_t parts = work < GS_PARALLEL_WORK ? 1 : gs_num_threads();
  /* big jobs in parts of about GS_PARALLEL_BLOCK work, so Ctrl-C is
   * noticed between them */
  if (work >= GS_PARALLEL_WORK && work / GS_PARALLEL_BLOCK > parts) parts = work / GS_PARALLEL_BLOCK;
  if (parts > n) parts = n;
  if (parts <= 1) { body(0, n, ctx); return GS_OK; }
  range_job j = {n, parts, body, ctx};
  return gs_parallel_run(parts, range_chunk, &j);
}
