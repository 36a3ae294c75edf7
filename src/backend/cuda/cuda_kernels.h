/* cuda_kernels.h: the seam between the CUDA backend's C side
 * (backend_cuda.c, cuda_blas.c) and its kernels (kernels/NAME.cu below it). Plain C,
 * so nvcc and the C compiler both read it; only CUDA builds include it.
 *
 * The C side provides per-device streams and the caching allocator; the
 * kernel files provide one entry point per gs_backend slot, with the
 * slot's signature and contract (see gs_backend.h). */
#ifndef CUDA_KERNELS_H
#define CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include "core/gs_backend.h"
#include "core/gs_devflag.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- provided by backend_cuda.c ---- */

/* Makes `index` the calling thread's current device and gives its stream
 * (created on first use). All work for a device is queued on it. */
gs_status gs_cuda_stream(int index, cudaStream_t *out);
/* Scratch device memory from the caching allocator (NULL when out of
 * memory); freed blocks are reused in stream order, so scratch may be
 * freed as soon as the work using it is queued. */
void *gs_cuda_scratch_alloc(int index, size_t nbytes);
void gs_cuda_scratch_free(int index, void *ptr, size_t nbytes);
/* The device's error record (gs_devflag.h) in device memory, for kernels
 * that find bad data (an integer division by zero, an index out of
 * range): they record it there and finish, and the backend reports it at
 * the next copy to the host or synchronize. NULL before the device's
 * stream exists (gs_cuda_stream makes both). */
gs_devflag *gs_cuda_flag(int index);
/* Gives every wholly free cached segment of the device back (empty_cache). */
void gs_cuda_empty_cache(int index);
/* Turns a failed CUDA call into a gs_error naming the call, file and line
 * (out of memory becomes GS_ERR_OOM). Clears the non-sticky error state. */
gs_status gs_cuda_fail(cudaError_t err, const char *expr, const char *file, int line);

/* After a library call (cuBLAS, NCCL) failed: whether the CUDA context is
 * lost. The library saw the fault through its own CUDA runtime, not the
 * one linked here, so every started device's stream is waited for, which
 * reports a sticky error (an illegal address) to this runtime too. When
 * the context is lost, buf receives the explanation gs_cuda_fail gives
 * (the first error, and CUDA_LAUNCH_BLOCKING=1) and true is returned. */
bool gs_cuda_context_lost(const char *expr, const char *file, int line, char *buf, size_t n);

/* ---- provided by cuda_blas.c ---- */
gs_status gs_cublas_fail(int status, const char *expr, const char *file, int line);

/* Checks a CUDA runtime call; on failure records file, line and message
 * and returns the status from the enclosing function (never aborts). */
#define CUDA_CHECK(expr)                                                       \
  do {                                                                         \
    cudaError_t gs_cuda_err_ = (expr);                                         \
    if (gs_cuda_err_ != cudaSuccess) return gs_cuda_fail(gs_cuda_err_, #expr, __FILE__, __LINE__); \
  } while (0)
/* The same for a kernel launch (launch errors are read back at once). */
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
/* Checks a cuBLAS call (status 0 is CUBLAS_STATUS_SUCCESS). */
#define CUBLAS_CHECK(expr)                                                     \
  do {                                                                         \
    int gs_blas_st_ = (int)(expr);                                             \
    if (gs_blas_st_ != 0) return gs_cublas_fail(gs_blas_st_, #expr, __FILE__, __LINE__); \
  } while (0)

/* ---- provided by backend/cuda/kernels/NAME.cu: the gs_backend kernel slots ---- */
gs_status gs_cuda_copy(gs_tensor *dst, const gs_tensor *src);                       /* copy.cu */
gs_status gs_cuda_fill(gs_tensor *dst, gs_scalar value);                            /* copy.cu */
gs_status gs_cuda_arange(gs_tensor *dst, double start, double step);                /* copy.cu */
gs_status gs_cuda_unary(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args); /* unary.cu */
gs_status gs_cuda_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b); /* binary.cu */
gs_status gs_cuda_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim); /* reduce.cu */
gs_status gs_cuda_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log);   /* softmax.cu */
gs_status gs_cuda_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset); /* random.cu */
gs_status gs_cuda_index_select(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx); /* index.cu */
gs_status gs_cuda_index_add(gs_tensor *out, int dim, const gs_tensor *idx, const gs_tensor *src); /* index.cu */
gs_status gs_cuda_check_index(const gs_tensor *idx, int64_t size, int code);          /* index.cu */
gs_status gs_cuda_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b);       /* cuda_blas.c */
/* int64 products, c[z] = a[z] @ b[z] with any strides (cuBLAS has none). */
gs_status gs_cuda_gemm_i64(gs_tensor *c, const gs_tensor *a, const gs_tensor *b);   /* gemm.cu */
/* convolution (conv2d) */
gs_status gs_cuda_im2col(gs_tensor *col, const gs_tensor *x, const gs_conv_geom *g); /* conv.cu */
gs_status gs_cuda_col2im(gs_tensor *x, const gs_tensor *col, const gs_conv_geom *g); /* conv.cu */
/* issue 20: pooling and resizing (pool.cu), batch norm (norm.cu) */
gs_status gs_cuda_pool2d(const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax, const gs_tensor *x);
gs_status gs_cuda_pool2d_backward(const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                                  const gs_tensor *argmax);
gs_status gs_cuda_bn_stats(gs_tensor *stats, const gs_tensor *x);
gs_status gs_cuda_bn_reduce(gs_tensor *sums, const gs_tensor *gy, const gs_tensor *x, const gs_tensor *mean);
gs_status gs_cuda_bn_elemt(gs_tensor *out, const gs_tensor *a, const gs_tensor *x, const gs_tensor *k);
gs_status gs_cuda_resize(const gs_resize_params *p, gs_tensor *out, const gs_tensor *x);
gs_status gs_cuda_resize_backward(const gs_resize_params *p, gs_tensor *gx, const gs_tensor *gy);

#ifdef __cplusplus
}
#endif

#endif
