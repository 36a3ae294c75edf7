/* cpu_gemm.c: batched matrix products. float32/float64 go to OpenBLAS,
 * which takes either row-major layout of each operand through its
 * transpose flag; int64 uses a plain i-k-j loop. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include "backend_cpu.h"
#include "gs_parallel.h"

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

/* Multiply-adds per BLAS call in a big product (about 20 ms). */
#define GEMM_PANEL_WORK ((int64_t)1 << 30)

gs_status gs_cpu_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b) {
  int64_t B = c->shape[0], M = c->shape[1], N = c->shape[2], K = a->shape[2];
  size_t es = gs_dtype_size(c->dtype);
  char *cp = gs_tensor_ptr(c);
  const char *ap = gs_tensor_ptr(a), *bp = gs_tensor_ptr(b);
  if (M == 0 || N == 0) return GS_OK;
  if (K == 0) { memset(cp, 0, (size_t)(B * M * N) * es); return GS_OK; }
  /* a big product polls Ctrl-C per matrix of the batch (per row for
   * int64); a small one never does */
  bool poll = (double)B * (double)M * (double)N * (double)K >= (double)GS_PARALLEL_BLOCK && gs_interruptible();
  if (c->dtype == GS_INT64) {
    for (int64_t z = 0; z < B; z++) {
      int64_t *cz = (int64_t *)cp + z * M * N;
      memset(cz, 0, sizeof(int64_t) * (size_t)(M * N));
      for (int64_t i = 0; i < M; i++) {
        if (poll && gs_interrupted) return gs_interrupted_error();
        for (int64_t k = 0; k < K; k++) {
          uint64_t av = (uint64_t)((const int64_t *)ap)[z * a->stride[0] + i * a->stride[1] + k * a->stride[2]];
          const int64_t *brow = (const int64_t *)bp + z * b->stride[0] + k * b->stride[1];
          for (int64_t j = 0; j < N; j++) cz[i * N + j] = (int64_t)((uint64_t)cz[i * N + j] + av * (uint64_t)brow[j * b->stride[2]]);
        }
      }
    }
    return GS_OK;
  }
  bool ta, tb;
  int64_t lda, ldb;
  bool ok_a = blas_layout(M, K, a->stride[1], a->stride[2], &ta, &lda);
  bool ok_b = blas_layout(K, N, b->stride[1], b->stride[2], &tb, &ldb);
  char *scratch_a = NULL, *scratch_b = NULL;
  if (!ok_a) { scratch_a = malloc((size_t)(M * K) * es); ta = false; lda = K; }
  if (!ok_b) { scratch_b = malloc((size_t)(K * N) * es); tb = false; ldb = N; }
  if ((!ok_a && !scratch_a) || (!ok_b && !scratch_b)) {
    free(scratch_a); free(scratch_b);
    return gs_error_code(GS_ERR_OOM, "out of host memory in matmul");
  }
  for (int64_t z = 0; z < B; z++) {
    if (poll && gs_interrupted) {
      free(scratch_a);
      free(scratch_b);
      return gs_interrupted_error();
    }
    const char *az = ap + z * a->stride[0] * (int64_t)es, *bz = bp + z * b->stride[0] * (int64_t)es;
    if (scratch_a) { pack(scratch_a, az, M, K, a->stride[1], a->stride[2], es); az = scratch_a; }
    if (scratch_b) { pack(scratch_b, bz, K, N, b->stride[1], b->stride[2], es); bz = scratch_b; }
    char *cz = cp + z * M * N * (int64_t)es;
    /* one product of rows [i0, i0 + rows) per BLAS call: a single big
     * product is split into panels of at least 512 rows, so Ctrl-C is
     * noticed between them without costing BLAS its efficiency */
    int64_t rows = M;
    if (poll && (double)M * (double)N * (double)K >= (double)GEMM_PANEL_WORK * 2) {
      rows = GEMM_PANEL_WORK / (N * K);
      if (rows < 512) rows = 512;
    }
    for (int64_t i0 = 0; i0 < M; i0 += rows) {
      if (i0 > 0 && gs_interrupted) {
        free(scratch_a);
        free(scratch_b);
        return gs_interrupted_error();
      }
      int64_t m = M - i0 < rows ? M - i0 : rows;
      /* row i0 of A: i0 rows down (row-major) or i0 columns across (transposed) */
      const char *ai = az + i0 * (ta ? 1 : lda) * (int64_t)es;
      char *ci = cz + i0 * N * (int64_t)es;
      if (c->dtype == GS_FLOAT32)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (blasint)m, (blasint)N, (blasint)K, 1.0f, (const float *)ai, (blasint)lda,
                    (const float *)bz, (blasint)ldb, 0.0f, (float *)ci, (blasint)N);
      else
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (blasint)m, (blasint)N, (blasint)K, 1.0, (const double *)ai, (blasint)lda,
                    (const double *)bz, (blasint)ldb, 0.0, (double *)ci, (blasint)N);
    }
  }
  free(scratch_a);
  free(scratch_b);
  return GS_OK;
}
