/* bench/blas/split.c: is splitting a product into single-threaded
 * OpenBLAS calls on our own threads (src/backend/cpu/cpu_gemm.c) slower
 * than one call to OpenBLAS with its own threads? In one process, the two
 * ways in alternation (A B A B ...) on the same n x n float32 operands,
 * each rep the median of a few products; prints the median of per-pair
 * time ratios (split / openblas) with the smallest and largest pair.
 * Build and run: sh bench/blas/run.sh (or cc -O2 split.c -lopenblas -lpthread). */
#include <cblas.h>
#include <pthread.h>
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
typedef struct { int r0, r1; } half;
static void *rows(void *p) {
  half *h = p;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h->r1 - h->r0, n, n, 1.0f, A + (size_t)h->r0 * n, n, B, n,
              0.0f, C + (size_t)h->r0 * n, n);
  return NULL;
}

static double split2(void) { /* rows split 8-aligned, like GEMM_ALIGN_ROWS */
  double t = now();
  half h[2] = {{0, n / 2 / 8 * 8}, {n / 2 / 8 * 8, n}};
  pthread_t th;
  pthread_create(&th, NULL, rows, &h[1]);
  rows(&h[0]);
  pthread_join(th, NULL);
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
  qsort(r, (size_t)pairs, sizeof(double), cmp);
  double fl = 2.0 * n * n * n * per * pairs;
  printf("n=%d: split over 2 threads %.1f GFLOP/s, OpenBLAS's 2 threads %.1f GFLOP/s; time ratio split/openblas "
         "median %.3f (min %.3f, max %.3f, %d pairs)\n", n, fl / sa / 1e9, fl / sb / 1e9, r[pairs / 2], r[0], r[pairs - 1], pairs);
  return 0;
}
