/* bench/blas/split.c: is splitting a product into single-threaded
 * OpenBLAS calls on our own threads (src/backend/cpu/cpu_gemm.c) slower
 * than one call to OpenBLAS with its own threads? In one process, the two
 * ways in alternation (A B A B ...) on the same n x n float32 operands,
 * each rep the median of a few products; prints the median of per-pair
 * time ratios (split / openblas) with the smallest and largest pair.
 * Build and run: sh bench/blas/run.sh (or cc -O2 split.c -lopenblas -lpthread). */
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int n;
static float *A, *B, *C;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* rows [r0, r1) of C, one single-threaded call (as cpu_gemm.c's blocks) */
static void rows(int r0, int r1) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, n, n, 1.0f, A + (size_t)r0 * n, n, B, n, 0.0f,
              C + (size_t)r0 * n, n);
}

/* A persistent worker, as gshell's pool (src/core/gs_parallel.c): it
 * watches for the next job for 200 us, then sleeps until woken, so that
 * back-to-back products find it awake and OpenBLAS's own threads, timed
 * in between, get both cores. (A thread created per product would time
 * pthread_create, not the split.) */
static atomic_int job, done_job;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static void *worker(void *arg) {
  (void)arg;
  for (int seen = 0;;) {
    int j;
    double t0 = now();
    while ((j = atomic_load_explicit(&job, memory_order_acquire)) == seen && now() - t0 < 200e-6) {}
    if (j == seen) {
      pthread_mutex_lock(&mu);
      while ((j = atomic_load(&job)) == seen) pthread_cond_wait(&cv, &mu);
      pthread_mutex_unlock(&mu);
    }
    if (j < 0) return NULL;
    seen = j;
    rows(n / 2 / 8 * 8, n);
    atomic_store_explicit(&done_job, j, memory_order_release);
  }
}

static void post(int j) {
  pthread_mutex_lock(&mu);
  atomic_store_explicit(&job, j, memory_order_release);
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
}

static double split2(void) { /* rows split 8-aligned, like GEMM_ALIGN_ROWS */
  double t = now();
  int j = atomic_load(&job) + 1;
  post(j);
  rows(0, n / 2 / 8 * 8);
  while (atomic_load_explicit(&done_job, memory_order_acquire) != j) {}
  return now() - t;
}

static double blas2(void) {
  double t = now();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
  return now() - t;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  n = argc > 1 ? atoi(argv[1]) : 500;
  int pairs = argc > 2 ? atoi(argv[2]) : 21, per = n <= 500 ? 20 : 2;
  A = malloc(sizeof(float) * (size_t)n * n); B = malloc(sizeof(float) * (size_t)n * n); C = malloc(sizeof(float) * (size_t)n * n);
  for (size_t i = 0; i < (size_t)n * n; i++) { A[i] = (float)(i % 7) - 3; B[i] = (float)(i % 5) - 2; }
  double *r = malloc(sizeof(double) * (size_t)pairs), sa = 0, sb = 0;
  pthread_t th;
  pthread_create(&th, NULL, worker, NULL);
  for (int p = 0; p < pairs; p++) {
    double ta = 0, tb = 0;
    openblas_set_num_threads(1);
    split2();
    for (int i = 0; i < per; i++) ta += split2();
    openblas_set_num_threads(2);
    blas2();
    for (int i = 0; i < per; i++) tb += blas2();
    r[p] = ta / tb; sa += ta; sb += tb;
  }
  post(-1);
  pthread_join(th, NULL);
  qsort(r, (size_t)pairs, sizeof(double), cmp);
  double fl = 2.0 * n * n * n * per * pairs;
  printf("n=%d: split over 2 threads %.1f GFLOP/s, OpenBLAS's 2 threads %.1f GFLOP/s; time ratio split/openblas "
         "median %.3f (min %.3f, max %.3f, %d pairs)\n", n, fl / sa / 1e9, fl / sb / 1e9, r[pairs / 2], r[0], r[pairs - 1], pairs);
  return 0;
}
