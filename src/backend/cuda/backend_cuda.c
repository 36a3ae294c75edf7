/* backend_cuda.c: the CUDA backend's table: real GPUs through the CUDA
 * runtime (linked statically, so the binary starts where there is no
 * driver), kernels from backend/cuda/kernels/ (one .cu file per op family), matrix
 * products from cuda_blas.c.
 *
 * Everything is lazy: the device count is asked for on first use, and a
 * device's stream is created the first time work is queued on it. Each
 * device has one stream; all of its work, copies included, is queued
 * there asynchronously, and only copies to the host and synchronize wait.
 * Because there is one stream per device, freed memory can go straight
 * back to the cache: any later use of a block is queued after the work
 * that used it before (cross-device copies make each stream wait for the
 * other, see cuda_memcpy_d2d).
 *
 * Memory comes from the caching allocator shared with the simulated GPUs
 * (gs_block_pool.c): PyTorch's segment sizes (2 MiB for small tensors,
 * 20 MiB up to 10 MiB, then multiples of 2 MiB), best fit with splitting
 * and merging; empty_cache gives wholly free segments back with cudaFree.
 * Figures follow PyTorch: allocated = bytes in live blocks, reserved =
 * bytes of all segments, max_allocated and max_reserved = their peaks
 * since reset_peak. */
#ifdef GS_HAVE_CUDA

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "backend/cuda/backend_cuda.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_nccl.h"
#include "core/gs_block_pool.h"
#include "core/gs_dlopen.h"

#define MAX_DEVICES GS_MAX_CUDA_DEVICES

typedef struct {
  pthread_mutex_t lock;  /* start-up and peer access */
  int started;           /* stream created (read with acquire) */
  cudaStream_t stream;
  gs_block_pool pool;
  gs_devflag *flag_dev, *flag_host; /* the error record (gs_devflag.h) and its pinned host copy */
  signed char peer[MAX_DEVICES]; /* 0 unknown, 1 peer access enabled, -1 none */
} cuda_dev;

static cuda_dev devs[MAX_DEVICES];
static int ndevices;
static char unavailable[256];
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

/* Why the runtime found no device, in words a user can act on. The
 * runtime (linked statically) opens the driver, libcuda.so.1, itself and
 * reports its absence as "driver version is insufficient", which sends
 * people looking for a newer driver on a machine that has none. */
static void explain(cudaError_t e) {
  void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!drv) {
    snprintf(unavailable, sizeof unavailable,
             "no NVIDIA driver: libcuda.so.1 was not found (install the NVIDIA driver, or add the directory holding "
             "libcuda.so.1 to LD_LIBRARY_PATH)");
    return;
  }
  dlclose(drv);
  int have = 0;
  if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&have) == cudaSuccess && have > 0)
    snprintf(unavailable, sizeof unavailable,
             "%s: the NVIDIA driver supports CUDA %d.%d, gshell was built with CUDA %d.%d (CUDA 13 needs driver 580 "
             "or newer)",
             cudaGetErrorString(e), have / 1000, have % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
  else
    snprintf(unavailable, sizeof unavailable, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
}

/* The first question to the driver. Failure of any kind means no devices. */
static void *segment_alloc(void *ctx, size_t n);
static void segment_free(void *ctx, void *p, size_t n);

static void probe(void) {
  for (int i = 0; i < MAX_DEVICES; i++) {
    pthread_mutex_init(&devs[i].lock, NULL);
    gs_pool_device dev = {segment_alloc, segment_free, gs_pool_pytorch_segment, (void *)(intptr_t)i, 0};
    gs_pool_init(&devs[i].pool, &dev);
  }
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    explain(e);
    n = 0;
  } else if (n == 0) {
    snprintf(unavailable, sizeof unavailable, "no CUDA-capable device is detected");
  }
  /* list the driver the runtime loaded (RTLD_NOLOAD: only if it did) */
  void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (drv) {
    gs_cuda_note_library("driver", drv);
    dlclose(drv);
  }
  ndevices = n > MAX_DEVICES ? MAX_DEVICES : n;
}

int gs_cuda_real_device_count(void) {
  pthread_once(&probe_once, probe);
  return ndevices;
}

const char *gs_cuda_unavailable_reason(void) { return unavailable; }

/* Errors after which the context is unusable: every later CUDA call
 * returns them again ("sticky"), whatever it is. They come from a kernel
 * queued earlier, not from the call that reports them. */
static bool sticky(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress: case cudaErrorInvalidAddressSpace: case cudaErrorInvalidPc:
  case cudaErrorHardwareStackError: case cudaErrorAssert: case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable: case cudaErrorContextIsDestroyed:
    return true;
  default:
    return false;
  }
}

/* The first sticky error, reported again by every later failure. */
static pthread_mutex_t lost_lock = PTHREAD_MUTEX_INITIALIZER;
static char lost[400];

/* Records err if it is the first sticky error; then writes into buf the
 * one explanation every failure path gives once the context is lost (CUDA
 * calls here, cuBLAS and NCCL in cuda_blas.c and cuda_nccl.c) and returns
 * true, or returns false while the context is fine. */
static bool lost_message(cudaError_t err, const char *expr, const char *file, int line, char *buf, size_t n) {
  pthread_mutex_lock(&lost_lock);
  if (sticky(err) && !lost[0])
    snprintf(lost, sizeof lost, "%s (%s), noticed in %s at %s:%d", cudaGetErrorString(err), cudaGetErrorName(err),
             expr, file, line);
  char was[sizeof lost];
  snprintf(was, sizeof was, "%s", lost);
  pthread_mutex_unlock(&lost_lock);
  if (!was[0]) return false;
  snprintf(buf, n, "the CUDA context is lost after %s. A kernel queued earlier failed (kernels run asynchronously, "
           "so the op that noticed is not the one at fault); every later CUDA call fails the same way: restart "
           "gshell, and run it with CUDA_LAUNCH_BLOCKING=1 to stop at the op that fails", was);
  return true;
}

gs_status gs_cuda_fail(cudaError_t err, const char *expr, const char *file, int line) {
  (void)cudaGetLastError(); /* clears the error unless it is sticky */
  char why[sizeof lost + 400];
  if (lost_message(err, expr, file, line, why, sizeof why)) return gs_error("CUDA error: %s", why);
  gs_status code = err == cudaErrorMemoryAllocation ? GS_ERR_OOM : GS_ERR;
  return gs_error_code(code, "CUDA error: %s (%s) in %s at %s:%d", cudaGetErrorString(err), cudaGetErrorName(err),
                       expr, file, line);
}

bool gs_cuda_context_lost(const char *expr, const char *file, int line, char *buf, size_t n) {
  cudaError_t seen = cudaSuccess;
  int current = 0;
  bool have_current = cudaGetDevice(&current) == cudaSuccess;
  for (int i = 0; i < ndevices && seen == cudaSuccess; i++) {
    if (!__atomic_load_n(&devs[i].started, __ATOMIC_ACQUIRE)) continue;
    cudaError_t e = cudaSetDevice(i);
    if (e == cudaSuccess) e = cudaStreamSynchronize(devs[i].stream);
    if (sticky(e)) seen = e;
  }
  if (have_current) (void)cudaSetDevice(current);
  (void)cudaGetLastError();
  return lost_message(seen, expr, file, line, buf, n);
}

static bool valid(int index) { return index >= 0 && index < gs_cuda_real_device_count(); }

/* Makes index current for this thread and its stream ready. */
gs_status gs_cuda_stream(int index, cudaStream_t *out) {
  if (!valid(index)) return gs_error("cuda:%d is not available (%d CUDA devices)", index, gs_cuda_real_device_count());
  cuda_dev *d = &devs[index];
  CUDA_CHECK(cudaSetDevice(index));
  if (!__atomic_load_n(&d->started, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&d->lock);
    cudaError_t e = cudaSuccess;
    if (!d->started) {
      e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
      if (e == cudaSuccess && !d->flag_dev) e = cudaMalloc((void **)&d->flag_dev, sizeof(gs_devflag));
      if (e == cudaSuccess) e = cudaMemsetAsync(d->flag_dev, 0, sizeof(gs_devflag), d->stream);
      if (e == cudaSuccess && !d->flag_host) e = cudaMallocHost((void **)&d->flag_host, sizeof(gs_devflag));
      if (e == cudaSuccess) {
        memset(d->flag_host, 0, sizeof(gs_devflag));
        __atomic_store_n(&d->started, 1, __ATOMIC_RELEASE);
      }
    }
    pthread_mutex_unlock(&d->lock);
    if (e != cudaSuccess) return gs_cuda_fail(e, "cudaStreamCreateWithFlags", __FILE__, __LINE__);
  }
  *out = d->stream;
  return GS_OK;
}

gs_devflag *gs_cuda_flag(int index) { return index >= 0 && index < MAX_DEVICES ? devs[index].flag_dev : NULL; }

/* Waits for the device's queued work, with its error record copied back
 * in the same wait (one small copy more, no second wait), and reports
 * what a kernel recorded there; the record is then cleared on the device
 * (in stream order) so the device stays usable. */
static gs_status sync_and_check(int index, cudaStream_t st) {
  cuda_dev *d = &devs[index];
  CUDA_CHECK(cudaMemcpyAsync(d->flag_host, d->flag_dev, sizeof(gs_devflag), cudaMemcpyDeviceToHost, st));
  CUDA_CHECK(cudaStreamSynchronize(st));
  const gs_devflag *f = d->flag_host;
  if (f->code == GS_FLAG_NONE && !f->zero_div[0] && !f->zero_div[1]) return GS_OK;
  CUDA_CHECK(cudaMemsetAsync(d->flag_dev, 0, sizeof(gs_devflag), st));
  char name[32];
  snprintf(name, sizeof name, "cuda:%d", index);
  return gs_devflag_take(d->flag_host, name);
}

/* ---- the caching allocator (gs_block_pool.c) ---- */

/* Why the last allocation on each device failed when it was not for lack
 * of memory ("" when it was): see the alloc_failure slot. */
static char alloc_why[MAX_DEVICES][256];

/* A segment from the driver. The pool's lock is held; the device is
 * current (cuda_alloc made it so). */
static void *segment_alloc(void *ctx, size_t n) {
  int index = (int)(intptr_t)ctx;
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, n);
  if (e == cudaSuccess) return p;
  (void)cudaGetLastError();
  if (e != cudaErrorMemoryAllocation) {
    gs_status s = gs_cuda_fail(e, "cudaMalloc", __FILE__, __LINE__); /* names a lost context */
    (void)s;
    snprintf(alloc_why[index], sizeof alloc_why[index], "CUDA error on cuda:%d while allocating %zu bytes: %s", index,
             n, gs_last_error());
  }
  return NULL;
}

/* Back to the driver (empty_cache, or a full device). cudaFree waits for
 * the device's work, so no queued kernel still uses the segment. */
static void segment_free(void *ctx, void *p, size_t n) {
  int index = (int)(intptr_t)ctx;
  if (cudaSetDevice(index) == cudaSuccess) (void)cudaFree(p);
  (void)cudaGetLastError();
}

static const char *cuda_alloc_failure(int index) {
  return index >= 0 && index < MAX_DEVICES && alloc_why[index][0] ? alloc_why[index] : NULL;
}

static void *cuda_alloc(int index, size_t nbytes) {
  cudaStream_t st;
  alloc_why[index][0] = '\0';
  if (gs_cuda_stream(index, &st) != GS_OK) {
    snprintf(alloc_why[index], sizeof alloc_why[index], "%s", gs_last_error());
    return NULL;
  }
  return gs_pool_alloc(&devs[index].pool, nbytes);
}

/* Back to the cache, no CUDA call (safe at exit, after the runtime is
 * gone). Blocks are reused in stream order: there is one stream per
 * device, so any later use is queued after the work that used it before. */
static void cuda_free(int index, void *p, size_t nbytes) {
  if (p && index >= 0 && index < MAX_DEVICES) gs_pool_free(&devs[index].pool, p);
}

void *gs_cuda_scratch_alloc(int index, size_t nbytes) { return cuda_alloc(index, nbytes); }
void gs_cuda_scratch_free(int index, void *ptr, size_t nbytes) { cuda_free(index, ptr, nbytes); }

static void cuda_empty_cache(int index) {
  if (valid(index)) gs_pool_release(&devs[index].pool);
}
void gs_cuda_empty_cache(int index) { cuda_empty_cache(index); }

static void cuda_mem_stats(int index, gs_mem_stats *s) {
  memset(s, 0, sizeof *s);
  if (!valid(index)) return;
  gs_pool_stats st;
  gs_pool_stats_get(&devs[index].pool, &st);
  s->allocated = st.allocated;
  s->max_allocated = st.peak_allocated;
  s->reserved = st.reserved;
  s->max_reserved = st.peak_reserved;
  size_t fr = 0, total = 0;
  if (cudaSetDevice(index) == cudaSuccess && cudaMemGetInfo(&fr, &total) == cudaSuccess) {
    s->free = fr;
    s->total = total;
  }
  (void)cudaGetLastError();
}

/* No CUDA call: a device whose stream was never made has no blocks, and
 * its pool may not even exist yet (probe makes the pools). */
static size_t cuda_pool_allocated(int index) {
  if (index < 0 || index >= MAX_DEVICES || !__atomic_load_n(&devs[index].started, __ATOMIC_ACQUIRE)) return 0;
  gs_pool_stats st;
  gs_pool_stats_get(&devs[index].pool, &st);
  return st.allocated;
}

static void cuda_reset_peak(int index) {
  if (valid(index)) gs_pool_reset_peak(&devs[index].pool);
}

/* ---- copies ---- */

/* The host buffer is the engine's ordinary (pageable) memory, which the
 * runtime stages before cudaMemcpyAsync returns: the caller may free or
 * reuse it at once. */
static gs_status cuda_memcpy_h2d(int index, void *dst, const void *src, size_t n) {
  cudaStream_t st;
  GS_TRY(gs_cuda_stream(index, &st));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, st));
  return GS_OK;
}

static gs_status cuda_memcpy_d2h(int index, void *dst, const void *src, size_t n) {
  cudaStream_t st;
  GS_TRY(gs_cuda_stream(index, &st));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, st));
  return sync_and_check(index, st); /* a copy to the host is a synchronisation: errors surface here */
}

/* Enables access from device di to si's memory once, where the hardware
 * allows; without it cudaMemcpyPeerAsync still works (through the host). */
static void enable_peer(int di, int si) {
  cuda_dev *d = &devs[di];
  pthread_mutex_lock(&d->lock);
  if (d->peer[si] == 0) {
    int can = 0;
    d->peer[si] = -1;
    if (cudaDeviceCanAccessPeer(&can, di, si) == cudaSuccess && can && cudaSetDevice(di) == cudaSuccess) {
      cudaError_t e = cudaDeviceEnablePeerAccess(si, 0);
      if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled) d->peer[si] = 1;
    }
    (void)cudaGetLastError();
  }
  pthread_mutex_unlock(&d->lock);
}

/* Same device: one async copy. Two devices: the copy is queued on the
 * destination's stream after the source's pending work (an event), and
 * the source's stream then waits for the copy, so neither buffer is
 * reused under it. Never fails for lack of peer access: the runtime
 * stages through the host itself, so the engine's bounce is not needed. */
static gs_status cuda_memcpy_d2d(int di, void *dst, int si, const void *src, size_t n) {
  cudaStream_t ds, ss;
  if (di == si) {
    GS_TRY(gs_cuda_stream(di, &ds));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, ds));
    return GS_OK;
  }
  GS_TRY(gs_cuda_stream(si, &ss));
  GS_TRY(gs_cuda_stream(di, &ds));
  enable_peer(di, si);
  cudaEvent_t src_ready = NULL, copied = NULL;
  gs_status s = GS_OK;
  cudaError_t e = cudaSetDevice(si);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&src_ready, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(src_ready, ss);
  if (e == cudaSuccess) e = cudaSetDevice(di);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(ds, src_ready, 0);
  if (e == cudaSuccess) e = cudaMemcpyPeerAsync(dst, di, src, si, n, ds);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&copied, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(copied, ds);
  if (e == cudaSuccess) e = cudaSetDevice(si);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(ss, copied, 0);
  if (e != cudaSuccess) s = gs_cuda_fail(e, "copy between devices", __FILE__, __LINE__);
  /* destroying a pending event is allowed: it is released once it completes */
  if (src_ready) (void)cudaEventDestroy(src_ready);
  if (copied) (void)cudaEventDestroy(copied);
  if (s == GS_OK) CUDA_CHECK(cudaSetDevice(di));
  return s;
}

/* Waits for the device's queued work; a device never used has none. */
static gs_status cuda_synchronize(int index) {
  if (!valid(index)) return gs_error("cuda:%d is not available", index);
  if (!__atomic_load_n(&devs[index].started, __ATOMIC_ACQUIRE)) return GS_OK;
  CUDA_CHECK(cudaSetDevice(index));
  return sync_and_check(index, devs[index].stream);
}

static gs_status cuda_properties(int index, gs_device_props *out) {
  memset(out, 0, sizeof *out);
  if (!valid(index)) return gs_error("cuda:%d is not available (%d CUDA devices)", index, gs_cuda_real_device_count());
  struct cudaDeviceProp p;
  CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  snprintf(out->name, sizeof out->name, "%s", p.name);
  out->total_memory = p.totalGlobalMem;
  out->major = p.major;
  out->minor = p.minor;
  out->multi_processor_count = p.multiProcessorCount;
  return GS_OK;
}

const gs_backend gs_backend_cuda = {
  .name = "cuda",
  .device_count = gs_cuda_real_device_count, .unavailable_reason = gs_cuda_unavailable_reason,
  .properties = cuda_properties, /* no utilization: gshell does not link NVML */
  .alloc = cuda_alloc, .alloc_failure = cuda_alloc_failure,
  .free = cuda_free,
  .empty_cache = cuda_empty_cache,
  .mem_stats = cuda_mem_stats, .pool_allocated = cuda_pool_allocated,
  .reset_peak = cuda_reset_peak,
  .memcpy_h2d = cuda_memcpy_h2d,
  .memcpy_d2h = cuda_memcpy_d2h,
  .memcpy_d2d = cuda_memcpy_d2d,
  .synchronize = cuda_synchronize,
  .copy = gs_cuda_copy,
  .fill = gs_cuda_fill,
  .unary = gs_cuda_unary,
  .binary = gs_cuda_binary,
  .reduce = gs_cuda_reduce,
  .softmax = gs_cuda_softmax,
  .gemm = gs_cuda_gemm,
  .arange = gs_cuda_arange,
  .random = gs_cuda_random,
  .index_select = gs_cuda_index_select,
  .index_add = gs_cuda_index_add,
  .check_index = gs_cuda_check_index,
  /* convolution (conv2d) */
  .im2col = gs_cuda_im2col, .col2im = gs_cuda_col2im,
  .collectives = &gs_nccl_collectives,
  /* issue 20: pooling, batch norm, resizing (backend/cuda/kernels/pool.cu, norm.cu) */
  .pool2d = gs_cuda_pool2d, .pool2d_backward = gs_cuda_pool2d_backward,
  .bn_stats = gs_cuda_bn_stats, .bn_reduce = gs_cuda_bn_reduce, .bn_elemt = gs_cuda_bn_elemt,
  .resize = gs_cuda_resize, .resize_backward = gs_cuda_resize_backward,
};

#endif /* GS_HAVE_CUDA */
