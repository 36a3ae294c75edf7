/* cpu_gemm.c: batched matrix products. float32/float64 go to OpenBLAS,
 * which takes either row-major layout of each operand through its
 * transpose flag; int64 uses a plain i-k-j loop.
 * OpenBLAS's own thread count is one setting for the whole process, so it
 * is set to 1 and the products are split here instead: each matrix of the
 * batch into row (or column) blocks, each block one single-threaded BLAS
 * call on a thread of the caller's worker set (gs_parallel.h). A
 * simulated device's products then use its share of the cores, and two
 * devices' products run at the same time. */
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cpu/cpu_gemm.h"
#include "core/gs_parallel.h"

/* How BLAS can read a [rows, cols] matrix with strides (sr, sc): directly
 * (row-major), transposed, or not at all (then the caller copies). */
static bool blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool *trans, int64_t *ld) {
  if (cols == 1 || sc == 1) {
    if (rows == 1 || sr >= (cols > 1 ? cols : 1)) { *trans = false; *ld = rows == 1 ? (cols > 1 ? cols : 1) : sr; return true; }
  }
  if (rows == 1 || sr == 1) {
    if (cols == 1 || sc >= (rows > 1 ? rows : 1)) { *trans = true; *ld = cols == 1 ? (rows > 1 ? rows : 1) : sc; return true; }
  }
  return false;
}

/* Copies one strided matrix into a dense row-major scratch buffer. */
static void pack(char *dst, const char *src, int64_t rows, int64_t cols, int64_t sr, int64_t sc, size_t es) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) memcpy(dst + (i * cols + j) * es, src + (i * sr + j * sc) * (int64_t)es, es);
}

/* Multiply-adds per BLAS call in a big product (some 20 to 40 ms on one
 * core), so Ctrl-C is noticed between calls. Not smaller: each row block
 * packs all of B again (at 2^30, 2000^3 took 8 blocks and lost to
 * OpenBLAS's own threads). */
#define GEMM_PANEL_WORK ((int64_t)1 << 31)
/* Below this many multiply-adds (about 100^3, some 40 us on one core) a
 * product runs as one call on the calling thread: waking a sleeping
 * worker costs tens of microseconds, more than the split would save
 * (at 64^3 splitting ran at a third of one thread's speed). */
#define GEMM_SPLIT_WORK ((int64_t)1 << 20)
/* Blocks start on multiples of this many columns (or rows) of c, the BLAS
 * kernels' unroll, so no block leaves the kernel a ragged edge it would
 * not have had anyway. cblas reads row-major c as its column-major
 * transpose: c's columns are the kernel's long unroll (16), c's rows its
 * short one (4 to 8). Rows at 16 split 500 as 240 + 260, so one thread
 * had 8% more to do and the other waited for it. */
#define GEMM_ALIGN 16
#define GEMM_ALIGN_ROWS 8

typedef struct {
  const gs_tensor *a, *b;
  gs_tensor *c;
  gs_dtype dt;
  size_t es;
  int64_t M, N, K;
  bool ok_a, ok_b, ta, tb;       /* BLAS reads the operand in place (and how) */
  int64_t lda, ldb;
  int64_t parts;                 /* blocks per matrix */
  bool split_n;                  /* blocks of columns rather than rows */
  atomic_bool oom;               /* a block's scratch could not be had */
  atomic_int refused;            /* the argument BLAS refused in some block, 0 if none */
} gemm_job;

/* BLAS takes its sizes as 32-bit ints (blasint): a product wider than
 * that (a conv1d padded by 2^30 has 2^31 output columns) is cut so every
 * call's m, n, k and leading dimensions fit, instead of being passed
 * truncated (OpenBLAS then printed a line, did nothing, and the result
 * was garbage: issue 33). Lowered by a test-only hook so the cutting is
 * exercised without 8 GiB operands. */
static _Atomic int64_t blas_limit = INT32_MAX;

void gs_cpu_gemm_set_blas_limit(int64_t limit) { atomic_store(&blas_limit, limit > 0 && limit < INT32_MAX ? limit : INT32_MAX); }

/* OpenBLAS reports a bad argument through xerbla_, which prints and
 * returns, leaving c untouched. Ours replaces it (the BLAS convention for
 * overriding the handler) and records the failure, so a call that BLAS
 * refused is an error, never a silent wrong answer. */
static _Thread_local int blas_refused;
void xerbla_(const char *name, const int *info, int len);
void xerbla_(const char *name, const int *info, int len) { (void)name; (void)len; blas_refused = info ? *info : -1; }

static void blas_one(gs_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const char *a, int64_t lda,
                     const char *b, int64_t ldb, char *c, int64_t ldc, bool acc) {
  if (dt == GS_FLOAT32)
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
                (blasint)k, 1.0f, (const float *)a, (blasint)lda, (const float *)b, (blasint)ldb, acc ? 1.0f : 0.0f,
                (float *)c, (blasint)ldc);
  else
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
                (blasint)k, 1.0, (const double *)a, (blasint)lda, (const double *)b, (blasint)ldb, acc ? 1.0 : 0.0,
                (double *)c, (blasint)ldc);
}

/* c[m, n] = a[m, k] b[k, n] (row-major, a and b read as ta/tb say) in
 * calls whose sizes all fit the limit: m, n and k in blocks (the k blocks
 * after the first add to c), and a leading dimension past the limit
 * makes its operand's block one line long, so BLAS never reads it (it
 * then gets the smallest legal value). Returns the first BLAS refusal's
 * argument number, 0 when every call ran. */
static int blas_call(gs_dtype dt, size_t es, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const char *a,
                     int64_t lda, const char *b, int64_t ldb, char *c, int64_t ldc) {
  int64_t lim = atomic_load(&blas_limit), E = (int64_t)es;
  int64_t bm = m < lim ? m : lim, bn = n < lim ? n : lim, bk = k < lim ? k : lim;
  /* a's lda steps over m (or k when read transposed), b's over k (or n),
   * c's over m */
  if (lda > lim) { if (ta) bk = 1; else bm = 1; }
  if (ldb > lim) { if (tb) bn = 1; else bk = 1; }
  if (ldc > lim) bm = 1;
  blas_refused = 0;
  for (int64_t i = 0; i < m; i += bm)
    for (int64_t j = 0; j < n; j += bn)
      for (int64_t p = 0; p < k; p += bk) {
        int64_t mm = m - i < bm ? m - i : bm, nn = n - j < bn ? n - j : bn, kk = k - p < bk ? k - p : bk;
        const char *ab = a + (ta ? p * lda + i : i * lda + p) * E, *bb = b + (tb ? j * ldb + p : p * ldb + j) * E;
        /* the smallest leading dimension BLAS accepts for each block */
        int64_t la = lda <= lim ? lda : (ta ? mm : kk), lb = ldb <= lim ? ldb : (tb ? kk : nn),
                lc = ldc <= lim ? ldc : nn;
        blas_one(dt, ta, tb, mm, nn, kk, ab, la, bb, lb, c + (i * ldc + j) * E, lc, p > 0);
        if (blas_refused) return blas_refused;
      }
  return 0;
}

int gs_cpu_gemm_refusal_selftest(void) {
  float a[4] = {0}, b[4] = {0}, c[4] = {0};
  /* lda 1 for a 2 x 2 row-major a: BLAS must refuse it (argument 9) */
  return blas_call(GS_FLOAT32, sizeof(float), false, false, 2, 2, 2, (const char *)a, 1, (const char *)b, 2,
                   (char *)c, 2);
}

/* Block p of `parts` along a dimension of size d, starting on multiples
 * of align: [*lo, *hi). */
static void block(int64_t d, int64_t p, int64_t parts, int64_t align, int64_t *lo, int64_t *hi) {
  *lo = p == 0 ? 0 : (d * p / parts) / align * align;
  *hi = p + 1 == parts ? d : (d * (p + 1) / parts) / align * align;
}

/* One block: rows [i0, i1) and columns [n0, n1) of one matrix of c. */
static void gemm_chunk(int64_t chunk, void *ctx) {
  gemm_job *j = ctx;
  int64_t z = chunk / j->parts, p = chunk % j->parts, i0 = 0, i1 = j->M, n0 = 0, n1 = j->N;
  if (j->split_n) block(j->N, p, j->parts, GEMM_ALIGN, &n0, &n1);
  else block(j->M, p, j->parts, GEMM_ALIGN_ROWS, &i0, &i1);
  if (i1 <= i0 || n1 <= n0) return;
  int64_t m = i1 - i0, n = n1 - n0, K = j->K, es = (int64_t)j->es;
  const char *az = gs_tensor_ptr(j->a) + z * j->a->stride[0] * es, *bz = gs_tensor_ptr(j->b) + z * j->b->stride[0] * es;
  char *cz = gs_tensor_ptr(j->c) + ((z * j->M + i0) * j->N + n0) * es;
  bool ta = j->ta, tb = j->tb;
  int64_t lda = j->lda, ldb = j->ldb;
  char *scratch_a = NULL, *scratch_b = NULL;
  const char *ap, *bp;
  /* an operand BLAS cannot read is copied, only the part this block reads */
  if (j->ok_a) ap = az + i0 * (ta ? 1 : lda) * es; /* row i0: i0 rows down, or i0 columns across */
  else {
    scratch_a = malloc((size_t)(m * K * es));
    if (!scratch_a) { atomic_store(&j->oom, true); return; }
    pack(scratch_a, az + i0 * j->a->stride[1] * es, m, K, j->a->stride[1], j->a->stride[2], j->es);
    ap = scratch_a; ta = false; lda = K;
  }
  if (j->ok_b) bp = bz + n0 * (tb ? ldb : 1) * es;
  else {
    scratch_b = malloc((size_t)(K * n * es));
    if (!scratch_b) { free(scratch_a); atomic_store(&j->oom, true); return; }
    pack(scratch_b, bz + n0 * j->b->stride[2] * es, K, n, j->b->stride[1], j->b->stride[2], j->es);
    bp = scratch_b; tb = false; ldb = n;
  }
  int bad = blas_call(j->dt, j->es, ta, tb, m, n, K, ap, lda, bp, ldb, cz, j->N);
  if (bad) atomic_store(&j->refused, bad);
  free(scratch_a);
  free(scratch_b);
}

static void blas_single_threaded(void) { openblas_set_num_threads(1); }

static int64_t gcd64(int64_t x, int64_t y) {
  while (y) { int64_t t = x % y; x = y; y = t; }
  return x;
}

static gs_status gemm_int64(gs_tensor *c, const gs_tensor *a, const gs_tensor *b, bool poll) {
  int64_t B = c->shape[0], M = c->shape[1], N = c->shape[2], K = a->shape[2];
  const int64_t *ap = (const int64_t *)gs_tensor_ptr(a), *bp = (const int64_t *)gs_tensor_ptr(b);
  for (int64_t z = 0; z < B; z++) {
    int64_t *cz = (int64_t *)gs_tensor_ptr(c) + z * M * N;
    memset(cz, 0, sizeof(int64_t) * (size_t)(M * N));
    for (int64_t i = 0; i < M; i++) {
      if (poll && gs_interrupted) return gs_interrupted_error();
      for (int64_t k = 0; k < K; k++) {
        uint64_t av = (uint64_t)ap[z * a->stride[0] + i * a->stride[1] + k * a->stride[2]];
        const int64_t *brow = bp + z * b->stride[0] + k * b->stride[1];
        for (int64_t j = 0; j < N; j++) cz[i * N + j] = (int64_t)((uint64_t)cz[i * N + j] + av * (uint64_t)brow[j * b->stride[2]]);
      }
    }
  }
  return GS_OK;
}

gs_status gs_cpu_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b) {
  static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
  int64_t B = c->shape[0], M = c->shape[1], N = c->shape[2], K = a->shape[2];
  size_t es = gs_dtype_size(c->dtype);
  if (M == 0 || N == 0 || B == 0) return GS_OK;
  if (K == 0) { memset(gs_tensor_ptr(c), 0, (size_t)(B * M * N) * es); return GS_OK; }
  double work = (double)B * (double)M * (double)N * (double)K;
  /* a big product polls Ctrl-C per block (per row for int64); a small one
   * never does */
  bool poll = work >= (double)GS_PARALLEL_BLOCK && gs_interruptible();
  if (c->dtype == GS_INT64) return gemm_int64(c, a, b, poll);
  pthread_once(&blas_once, blas_single_threaded);
  gemm_job j = {.a = a, .b = b, .c = c, .dt = c->dtype, .es = es, .M = M, .N = N, .K = K, .parts = 1};
  atomic_init(&j.oom, false);
  atomic_init(&j.refused, 0);
  j.ok_a = blas_layout(M, K, a->stride[1], a->stride[2], &j.ta, &j.lda);
  j.ok_b = blas_layout(K, N, b->stride[1], b->stride[2], &j.tb, &j.ldb);
  int64_t T = gs_num_threads(), per = M * N * K;
  /* blocks along the longer side of c, at least GEMM_ALIGN wide */
  j.split_n = N > M;
  int64_t align = j.split_n ? GEMM_ALIGN : GEMM_ALIGN_ROWS;
  int64_t side = j.split_n ? N : M, most = side / align > 0 ? side / align : 1;
  if (T > 1 && work >= (double)GEMM_SPLIT_WORK) {
    /* enough blocks that every thread gets the same number: a batch
     * smaller than the set, or not a multiple of it, is split further */
    if (B < 4 * T) j.parts = T / gcd64(B, T);
    /* a single small matrix is not worth splitting past what it fills */
    while (j.parts > 1 && per / j.parts < GEMM_SPLIT_WORK / 2) j.parts--;
  }
  /* big matrices in blocks of about GEMM_PANEL_WORK, so Ctrl-C is noticed
   * between calls; a multiple of the set's size keeps the threads even */
  if (poll && per >= 2 * GEMM_PANEL_WORK) {
    int64_t want = per / GEMM_PANEL_WORK;
    want = (want + T - 1) / T * T;
    if (want > j.parts) j.parts = want;
  }
  if (j.parts > most) j.parts = most;
  gs_status s = GS_OK;
  /* a product too small to poll or to share runs here, block by block */
  if (!poll && (T == 1 || work < (double)GEMM_SPLIT_WORK))
    for (int64_t chunk = 0; chunk < B * j.parts; chunk++) gemm_chunk(chunk, &j);
  else s = gs_parallel_run(B * j.parts, gemm_chunk, &j);
  if (s == GS_OK && atomic_load(&j.oom)) s = gs_error_code(GS_ERR_OOM, "out of host memory in matmul");
  if (s == GS_OK && atomic_load(&j.refused))
    s = gs_error("matmul: BLAS refused argument %d of a %s product of [%lld, %lld] by [%lld, %lld] (a bug in gshell: "
                 "please report it)", atomic_load(&j.refused), j.dt == GS_FLOAT32 ? "float32" : "float64",
                 (long long)M, (long long)K, (long long)K, (long long)N);
  return s;
}
