/* gs_parallel.c: worker sets behind gs_parallel_run. A set runs one job
 * at a time: the caller publishes it under the set's lock, wakes the
 * workers, takes chunks itself from a shared atomic counter, then closes
 * the job and waits only for the workers that joined it before it was
 * closed. A worker the scheduler has not run yet (another process holds
 * its core) is not waited for: it finds the job closed when it wakes and
 * leaves it alone. Waiting for every worker to check in made each
 * parallel op on a busy 2-core machine wait for a core it did not need
 * (a transformer step 2.6-2.9x slower on 2 threads than on 1 under a
 * load of 8). The global set (all the host's cores) starts on first use;
 * others are made by gs_workers_create. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "core/gs_parallel.h"

#define GS_PARALLEL_WORK 131072

#define MAX_THREADS 64
#define JOB_CLOSED 0x80000000u

struct gs_workers {
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  int nthreads;                 /* counting the caller's thread */
  int nworkers;                 /* threads started: nthreads - 1 */
  pthread_t *threads;
  _Atomic uint64_t generation;  /* bumped for each job (and to quit) */
  bool quit;
  /* the current job, written under the lock before generation moves */
  gs_chunk_fn job_fn;
  void *job_ctx;
  int64_t job_chunks;
  bool job_poll;                /* the job may stop at Ctrl-C (gs_common.h) */
  atomic_int_fast64_t next_chunk;
  atomic_bool job_stopped;      /* and did: some chunks were skipped */
  /* workers that joined the current job, plus JOB_CLOSED once the caller
   * has run out of chunks: a worker joining after that stays out */
  atomic_uint entered;
  atomic_uint finished;         /* joined workers done with it (changed under the lock) */
  atomic_bool running;          /* a caller owns the set for a job */
};

static gs_workers global_set;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int host_cores = 1;
static _Thread_local gs_workers *bound;
static _Thread_local bool in_chunk;   /* nested calls run inline */

static void take_chunks(gs_workers *w) {
  for (;;) {
    if (w->job_poll && gs_interrupted) { atomic_store(&w->job_stopped, true); return; }
    int64_t c = atomic_fetch_add(&w->next_chunk, 1);
    if (c >= w->job_chunks) return;
    w->job_fn(c, w->job_ctx);
  }
}

/* A thread that waits for the other side (a worker for the next job, the
 * caller for the last chunk) first watches for it for a while, then
 * sleeps. Sleeping is not free on a virtual machine: a vCPU with nothing
 * to run halts, and waking it again goes through the hypervisor, which
 * took tens of microseconds to milliseconds depending on the host's load
 * (what made 500x500 products swing between 0.84x and 1.03x PyTorch's
 * speed from one run to the next: every product woke the worker, and the
 * caller slept on the last block, 4 sleeps and wake-ups per product).
 * OpenBLAS's and OpenMP's threads spin for much longer and never pay it.
 * The watch is bounded in time, so a long pause (an interactive prompt, a
 * big serial op) still leaves the core free. */
#define WORKER_WATCH_NS 200000   /* after a job, for the next one */
#define CALLER_WATCH_NS 500000   /* for the workers' last chunks */

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Watches *gen until it differs from seen (true) or ns have passed. */
static bool watch_generation(_Atomic uint64_t *gen, uint64_t seen, uint64_t ns) {
  uint64_t end = now_ns() + ns;
  for (;;) {
    for (int k = 0; k < 64; k++) {
      if (atomic_load_explicit(gen, memory_order_acquire) != seen) return true;
      cpu_relax();
    }
    if (now_ns() >= end) return false;
  }
}

/* Watches *finished until it reaches joined (true) or ns have passed. */
static bool watch_finished(atomic_uint *finished, unsigned joined, uint64_t ns) {
  uint64_t end = now_ns() + ns;
  for (;;) {
    for (int k = 0; k < 64; k++) {
      if (atomic_load_explicit(finished, memory_order_acquire) >= joined) return true;
      cpu_relax();
    }
    if (now_ns() >= end) return false;
  }
}

static void *worker(void *arg) {
  gs_workers *w = arg;
  in_chunk = true;
  uint64_t seen = 0;
  pthread_mutex_lock(&w->lock);
  for (;;) {
    if (atomic_load(&w->generation) == seen) {
      pthread_mutex_unlock(&w->lock);
      watch_generation(&w->generation, seen, WORKER_WATCH_NS);
      pthread_mutex_lock(&w->lock);
    }
    while (atomic_load(&w->generation) == seen) pthread_cond_wait(&w->wake, &w->lock);
    seen = atomic_load(&w->generation);
    if (w->quit) break;
    pthread_mutex_unlock(&w->lock);
    /* join the job unless the caller already closed it (then this
     * worker woke late, and the job, or a newer one, is not its own) */
    unsigned was = atomic_fetch_add_explicit(&w->entered, 1, memory_order_acq_rel);
    bool joined = !(was & JOB_CLOSED);
    if (joined) take_chunks(w);
    pthread_mutex_lock(&w->lock);
    if (joined) {
      atomic_fetch_add_explicit(&w->finished, 1, memory_order_release);
      pthread_cond_signal(&w->done);
    }
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

/* Stops and joins the workers started so far. */
static void stop_workers(gs_workers *w) {
  pthread_mutex_lock(&w->lock);
  w->quit = true;
  atomic_fetch_add(&w->generation, 1);
  pthread_cond_broadcast(&w->wake);
  pthread_mutex_unlock(&w->lock);
  for (int i = 0; i < w->nworkers; i++) pthread_join(w->threads[i], NULL);
  w->nworkers = 0;
}

/* Starts nthreads - 1 workers; false (none left running) if any fails. */
static bool init_set(gs_workers *w, int nthreads) {
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->wake, NULL);
  pthread_cond_init(&w->done, NULL);
  atomic_init(&w->generation, 0);
  atomic_init(&w->next_chunk, 0);
  atomic_init(&w->entered, JOB_CLOSED);
  atomic_init(&w->finished, 0);
  atomic_init(&w->job_stopped, false);
  atomic_init(&w->running, false);
  w->quit = false;
  w->nthreads = 1;
  w->nworkers = 0;
  w->threads = NULL;
  if (nthreads > 1) {
    w->threads = calloc((size_t)(nthreads - 1), sizeof(pthread_t));
    if (!w->threads) return false;
    for (int i = 0; i < nthreads - 1; i++) {
      if (pthread_create(&w->threads[i], NULL, worker, w) != 0) { stop_workers(w); return false; }
      w->nworkers = i + 1;
    }
  }
  w->nthreads = nthreads;
  return true;
}

static void free_set(gs_workers *w) {
  stop_workers(w);
  free(w->threads);
  w->threads = NULL;
  pthread_cond_destroy(&w->done);
  pthread_cond_destroy(&w->wake);
  pthread_mutex_destroy(&w->lock);
}

static void start_global(void) {
  const char *env = getenv("GSHELL_NUM_THREADS");
  long n = env ? atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  host_cores = (int)n;
  /* with fewer threads than asked for (the system refused more), the
   * global set still runs everything, on the threads it got */
  for (; n > 1; n--) {
    if (init_set(&global_set, (int)n)) return;
    free_set(&global_set);
  }
  init_set(&global_set, 1);
}

static gs_workers *global(void) {
  pthread_once(&global_once, start_global);
  return &global_set;
}

int gs_host_cores(void) {
  global();
  return host_cores;
}

gs_workers *gs_workers_create(int nthreads) {
  if (nthreads < 1 || nthreads > MAX_THREADS) return NULL;
  gs_workers *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  if (!init_set(w, nthreads)) { free_set(w); free(w); return NULL; }
  return w;
}

void gs_workers_destroy(gs_workers *w) {
  if (!w || w == &global_set) return;
  free_set(w);
  free(w);
}

void gs_workers_bind(gs_workers *w) { bound = w; }

gs_workers *gs_workers_bound(void) { return bound; }

int gs_num_threads(void) { return bound ? bound->nthreads : global()->nthreads; }

static gs_status run_inline(int64_t nchunks, gs_chunk_fn fn, void *ctx, bool poll) {
  for (int64_t c = 0; c < nchunks; c++) {
    if (poll && gs_interrupted) return gs_interrupted_error();
    fn(c, ctx);
  }
  return GS_OK;
}

gs_status gs_parallel_run(int64_t nchunks, gs_chunk_fn fn, void *ctx) {
  if (nchunks <= 0) return GS_OK;
  /* a nested call runs inside a chunk of the outer job, which polls */
  bool poll = !in_chunk && gs_interruptible();
  gs_workers *w = bound ? bound : global();
  bool idle = false;
  /* one job per set at a time: a second caller (another thread bound to
   * the same set) runs its job on its own thread instead of waiting */
  if (nchunks == 1 || in_chunk || w->nthreads == 1 || !atomic_compare_exchange_strong(&w->running, &idle, true))
    return run_inline(nchunks, fn, ctx, poll);
  pthread_mutex_lock(&w->lock);
  w->job_fn = fn;
  w->job_ctx = ctx;
  w->job_chunks = nchunks;
  w->job_poll = poll;
  atomic_store(&w->job_stopped, false);
  atomic_store(&w->next_chunk, 0);
  atomic_store(&w->finished, 0);
  /* last: a worker that joins from here on sees the fields above */
  atomic_store_explicit(&w->entered, 0, memory_order_release);
  atomic_fetch_add(&w->generation, 1);
  pthread_cond_broadcast(&w->wake);
  pthread_mutex_unlock(&w->lock);
  in_chunk = true;
  take_chunks(w);
  in_chunk = false;
  /* close the job: the workers that joined finish their last chunks
   * (watch, then sleep; the lock orders their writes before ours either
   * way); one that has not joined yet never will */
  unsigned joined = atomic_fetch_or_explicit(&w->entered, JOB_CLOSED, memory_order_acq_rel) & ~JOB_CLOSED;
  if (joined > 0) {
    watch_finished(&w->finished, joined, CALLER_WATCH_NS);
    pthread_mutex_lock(&w->lock);
    while (atomic_load(&w->finished) < joined) pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
  }
  bool stopped = atomic_load(&w->job_stopped);
  atomic_store(&w->running, false);
  return stopped ? gs_interrupted_error() : GS_OK;
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
