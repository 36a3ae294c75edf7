/* cuda_blas.c: matrix products on CUDA devices. float32/float64 go to
 * cuBLAS, which is not linked at build time: it is opened with dlopen at
 * the first product (libcublas.so.13, then .12, then libcublas.so, on the
 * loader's path, then in the CUDA installation directory) and
 * the few functions needed are looked up by name, so gshell starts fast
 * and runs without cuBLAS installed (a product then fails with a clear
 * error). int64 products use gemm.cu's kernel.
 *
 * cuBLAS is column-major; the engine is row-major. A row-major [M, N]
 * product C = A B is the column-major product C^T = B^T A^T, so B goes
 * first and the dimensions swap. Each operand may be row-major or
 * transposed in memory (a t() view): both are expressed with cuBLAS's
 * op flags, as cpu_gemm.c does with OpenBLAS; any other layout is first
 * copied to a dense scratch tensor. */
#ifdef GS_HAVE_CUDA

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cuda/backend_cuda.h"
#include "backend/cuda/cuda_kernels.h"
#include "core/gs_dlopen.h"

/* The slice of the cuBLAS v2 ABI used here (values from cublas_api.h). */
typedef void *blas_handle;
enum { BLAS_OP_N = 0, BLAS_OP_T = 1 };
typedef int (*create_fn)(blas_handle *);
typedef int (*set_stream_fn)(blas_handle, cudaStream_t);
typedef int (*sgemm_batched_fn)(blas_handle, int, int, int, int, int, const float *, const float *, int, long long,
                                const float *, int, long long, const float *, float *, int, long long, int);
typedef int (*dgemm_batched_fn)(blas_handle, int, int, int, int, int, const double *, const double *, int, long long,
                                const double *, int, long long, const double *, double *, int, long long, int);
typedef const char *(*status_string_fn)(int);
typedef int (*set_workspace_fn)(blas_handle, void *, size_t);

static struct {
  void *lib;
  char error[1536];
  create_fn create;
  set_stream_fn set_stream;
  sgemm_batched_fn sgemm;
  dgemm_batched_fn dgemm;
  status_string_fn status_string; /* optional (cuBLAS >= 11.4) */
  set_workspace_fn set_workspace; /* optional (cuBLAS >= 11.0) */
} blas;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static blas_handle handles[64];
/* Each handle's workspace from the cache (NULL: cuBLAS's own pool). */
static struct { void *ptr; size_t bytes; } workspaces[64];

static void load(void) {
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
  static const char *const deps[] = {"libcublasLt.so.13", "libcublasLt.so.12", NULL};
  static const gs_cuda_lib_spec spec = {"cublas", names, deps, "cublas"};
  blas.lib = gs_cuda_dlopen(&spec, blas.error, sizeof blas.error);
  if (!blas.lib) return;
  /* POSIX allows converting dlsym's void * to a function pointer */
  *(void **)&blas.create = dlsym(blas.lib, "cublasCreate_v2");
  *(void **)&blas.set_stream = dlsym(blas.lib, "cublasSetStream_v2");
  *(void **)&blas.sgemm = dlsym(blas.lib, "cublasSgemmStridedBatched");
  *(void **)&blas.dgemm = dlsym(blas.lib, "cublasDgemmStridedBatched");
  *(void **)&blas.status_string = dlsym(blas.lib, "cublasGetStatusString");
  *(void **)&blas.set_workspace = dlsym(blas.lib, "cublasSetWorkspace_v2");
  if (!blas.create || !blas.set_stream || !blas.sgemm || !blas.dgemm) {
    snprintf(blas.error, sizeof blas.error, "cuBLAS was loaded but lacks cublasCreate_v2, cublasSetStream_v2 or "
             "cublas[SD]gemmStridedBatched");
    dlclose(blas.lib);
    blas.lib = NULL;
  }
}

gs_status gs_cublas_fail(int status, const char *expr, const char *file, int line) {
  static const struct { int code; const char *name; } known[] = {
    {1, "CUBLAS_STATUS_NOT_INITIALIZED"}, {3, "CUBLAS_STATUS_ALLOC_FAILED"}, {7, "CUBLAS_STATUS_INVALID_VALUE"},
    {8, "CUBLAS_STATUS_ARCH_MISMATCH"}, {11, "CUBLAS_STATUS_MAPPING_ERROR"}, {13, "CUBLAS_STATUS_EXECUTION_FAILED"},
    {14, "CUBLAS_STATUS_INTERNAL_ERROR"}, {15, "CUBLAS_STATUS_NOT_SUPPORTED"}, {16, "CUBLAS_STATUS_LICENSE_ERROR"}};
  const char *name = NULL;
  if (blas.status_string) name = blas.status_string(status);
  for (size_t i = 0; !name && i < sizeof known / sizeof known[0]; i++)
    if (known[i].code == status) name = known[i].name;
  char lost[1024];
  if (status != 3 && gs_cuda_context_lost(expr, file, line, lost, sizeof lost))
    return gs_error("cuBLAS error: %s (status %d) in %s at %s:%d; %s", name ? name : "unknown status", status, expr,
                    file, line, lost);
  return gs_error_code(status == 3 ? GS_ERR_OOM : GS_ERR, "cuBLAS error: %s (status %d) in %s at %s:%d",
                       name ? name : "unknown status", status, expr, file, line);
}

enum { BLAS_ALLOC_FAILED = 3 };

/* cuBLAS's workspace, taken from the caching allocator (so it shows in
 * memory_allocated and is not a second pool the cache cannot see): as
 * PyTorch sizes it, 32 MiB on Hopper and newer, 8 MiB before. */
static size_t workspace_bytes(int index) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) != cudaSuccess) {
    (void)cudaGetLastError();
    major = 0;
  }
  return major >= 9 ? (size_t)32 << 20 : (size_t)8 << 20;
}

/* A new handle for the device with its workspace. cuBLAS allocates when
 * a handle is made: on CUBLAS_STATUS_ALLOC_FAILED the cache is emptied
 * and it is tried once more. Handle lock held. */
static int create_handle(int index, blas_handle *h) {
  int st = blas.create(h);
  if (st == BLAS_ALLOC_FAILED) {
    gs_cuda_empty_cache(index);
    st = blas.create(h);
  }
  if (st != 0 || !blas.set_workspace) return st;
  size_t n = workspace_bytes(index);
  void *ws = gs_cuda_scratch_alloc(index, n);
  if (!ws) return 0; /* no room: cuBLAS keeps its own default workspace */
  if (blas.set_workspace(*h, ws, n) != 0) {
    gs_cuda_scratch_free(index, ws, n);
    return 0;
  }
  /* the workspace lives as long as the handle: the whole process */
  workspaces[index].ptr = ws;
  workspaces[index].bytes = n;
  return 0;
}

/* The device's cuBLAS handle, made on first use, bound to its stream. */
static gs_status handle_for(int index, cudaStream_t st, blas_handle *out) {
  pthread_once(&load_once, load);
  if (!blas.lib) return gs_error("%s", blas.error);
  if (index < 0 || index >= 64) return gs_error("cuda:%d: device ordinal out of range for cuBLAS", index);
  pthread_mutex_lock(&handle_lock);
  int st_create = 0;
  if (!handles[index]) st_create = create_handle(index, &handles[index]);
  blas_handle h = handles[index];
  if (st_create != 0) handles[index] = NULL;
  pthread_mutex_unlock(&handle_lock);
  if (st_create != 0) return gs_cublas_fail(st_create, "cublasCreate", __FILE__, __LINE__);
  CUBLAS_CHECK(blas.set_stream(h, st));
  /* cublasSetStream puts the handle back on cuBLAS's default workspace
   * pool (cuBLAS documents the reset), which would allocate outside the
   * cache: the cache's workspace is set again after every stream change */
  if (workspaces[index].ptr)
    CUBLAS_CHECK(blas.set_workspace(h, workspaces[index].ptr, workspaces[index].bytes));
  *out = h;
  return GS_OK;
}

/* How cuBLAS can read a row-major-indexed [rows, cols] matrix with strides
 * (sr, sc): as stored row by row (trans = false, ld = sr), column by
 * column (trans = true, ld = sc), or not at all (false is returned and
 * the operand is packed). Unit dims accept any stride. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool *trans, int64_t *ld) {
  int64_t rmin = rows > 1 ? rows : 1, cmin = cols > 1 ? cols : 1;
  if ((cols == 1 || sc == 1) && (rows == 1 || sr >= cmin)) {
    *trans = false;
    *ld = rows == 1 ? cmin : sr;
    return *ld <= INT_MAX;
  }
  if ((rows == 1 || sr == 1) && (cols == 1 || sc >= rmin)) {
    *trans = true;
    *ld = cols == 1 ? rmin : sc;
    return *ld <= INT_MAX;
  }
  return false;
}

/* An operand cuBLAS cannot read, copied to a dense [B, rows, cols]. */
static gs_status pack(const gs_tensor *x, gs_tensor **out) {
  gs_tensor *t;
  GS_TRY(gs_tensor_empty(gs_tensor_device(x), x->dtype, 3, x->shape, &t));
  gs_status s = gs_cuda_copy(t, x);
  if (s != GS_OK) { gs_tensor_release(t); return s; }
  *out = t;
  return GS_OK;
}

gs_status gs_cuda_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b) {
  int64_t B = c->shape[0], M = c->shape[1], N = c->shape[2], K = a->shape[2];
  if (B == 0 || M == 0 || N == 0) return GS_OK;
  if (K == 0) return gs_cuda_fill(c, gs_scalar_i(0));
  if (c->dtype == GS_INT64) return gs_cuda_gemm_i64(c, a, b);
  if (c->dtype != GS_FLOAT32 && c->dtype != GS_FLOAT64)
    return gs_error("matmul: no CUDA kernel for %s", gs_dtype_name(c->dtype));
  if (B > INT_MAX || M > INT_MAX || N > INT_MAX || K > INT_MAX)
    return gs_error("matmul: [%lld, %lld, %lld] x [%lld, %lld, %lld] is too large for cuBLAS (dims above %d)",
                    (long long)B, (long long)M, (long long)K, (long long)B, (long long)K, (long long)N, INT_MAX);
  int index = gs_tensor_device(c).index;
  cudaStream_t st;
  blas_handle h = NULL;
  GS_TRY(gs_cuda_stream(index, &st));
  GS_TRY(handle_for(index, st, &h));

  gs_tensor *pa = NULL, *pb = NULL;
  bool ta, tb;
  int64_t lda, ldb;
  gs_status s = GS_OK;
  /* a view whose row stride passes cuBLAS's int is copied like any other
   * layout cuBLAS cannot read (the packed copy's stride is K or N) */
  if (!blas_layout(M, K, a->stride[1], a->stride[2], &ta, &lda) || lda > INT_MAX) {
    s = pack(a, &pa);
    ta = false; lda = K;
  }
  if (s == GS_OK && (!blas_layout(K, N, b->stride[1], b->stride[2], &tb, &ldb) || ldb > INT_MAX)) {
    s = pack(b, &pb);
    tb = false; ldb = N;
  }
  if (s != GS_OK) { gs_tensor_release(pa); return s; }
  const gs_tensor *A = pa ? pa : a, *Bm = pb ? pb : b;
  long long sa = A->stride[0], sb = Bm->stride[0], sc = (long long)(M * N);
  int opa = ta ? BLAS_OP_T : BLAS_OP_N, opb = tb ? BLAS_OP_T : BLAS_OP_N;
  int st_blas = 0;
  /* column-major C^T [N, M] = B^T [N, K] x A^T [K, M]; a product that
   * cannot allocate is tried once more after the cache is emptied */
  for (int attempt = 0; attempt < 2; attempt++) {
    if (attempt) gs_cuda_empty_cache(index);
    if (c->dtype == GS_FLOAT32) {
      const float one = 1.0f, zero = 0.0f;
      st_blas = blas.sgemm(h, opb, opa, (int)N, (int)M, (int)K, &one, (const float *)gs_tensor_ptr(Bm), (int)ldb, sb,
                           (const float *)gs_tensor_ptr(A), (int)lda, sa, &zero, (float *)gs_tensor_ptr(c), (int)N,
                           sc, (int)B);
    } else {
      const double one = 1.0, zero = 0.0;
      st_blas = blas.dgemm(h, opb, opa, (int)N, (int)M, (int)K, &one, (const double *)gs_tensor_ptr(Bm), (int)ldb,
                           sb, (const double *)gs_tensor_ptr(A), (int)lda, sa, &zero, (double *)gs_tensor_ptr(c),
                           (int)N, sc, (int)B);
    }
    if (st_blas != BLAS_ALLOC_FAILED) break;
  }
  /* scratch goes back to the cache; its reuse is queued after this product */
  gs_tensor_release(pa);
  gs_tensor_release(pb);
  if (st_blas != 0)
    return gs_cublas_fail(st_blas, c->dtype == GS_FLOAT32 ? "cublasSgemmStridedBatched" : "cublasDgemmStridedBatched",
                          __FILE__, __LINE__);
  return GS_OK;
}

#endif /* GS_HAVE_CUDA */
