/* cuda_nccl.c: NCCL for collectives between real GPUs, in one process
 * (torch.cuda.comm: ncclCommInitAll communicators, one group call so one
 * thread drives every device) and across processes (torch.distributed's
 * nccl backend: ncclCommInitRank with an id the caller exchanged). NCCL
 * is not linked: libnccl.so.2 is opened with dlopen at the first use, as
 * cuda_blas.c opens cuBLAS (gs_dlopen.c finds it), and the few functions
 * used are looked up by name. Work is queued on each device's stream (gs_cuda_stream), so it is
 * ordered after everything already queued there. */
#ifdef GS_HAVE_CUDA

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_nccl.h"
#include "core/gs_dlopen.h"

/* The slice of the NCCL 2 ABI used here (values from nccl.h). */
typedef void *nccl_comm;
typedef struct { char internal[128]; } nccl_id;
enum { NC_INT8 = 0, NC_UINT8 = 1, NC_INT32 = 2, NC_INT64 = 4, NC_FLOAT16 = 6, NC_FLOAT32 = 7, NC_FLOAT64 = 8,
       NC_BFLOAT16 = 9 };
enum { NC_SUM = 0, NC_PROD = 1, NC_MAX = 2, NC_MIN = 3, NC_AVG = 4 };

static struct {
  void *lib;
  char error[512];
  int (*get_unique_id)(nccl_id *);
  int (*comm_init_all)(nccl_comm *, int, const int *);
  int (*comm_init_rank)(nccl_comm *, int, nccl_id, int);
  int (*comm_destroy)(nccl_comm);
  int (*group_start)(void);
  int (*group_end)(void);
  int (*bcast)(const void *, void *, size_t, int, int, nccl_comm, cudaStream_t);
  int (*reduce)(const void *, void *, size_t, int, int, int, nccl_comm, cudaStream_t);
  int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm, cudaStream_t);
  int (*all_gather)(const void *, void *, size_t, int, nccl_comm, cudaStream_t);
  int (*reduce_scatter)(const void *, void *, size_t, int, int, nccl_comm, cudaStream_t);
  const char *(*error_string)(int);
  int (*get_version)(int *);
} nc;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
  static const char *const names[] = {"libnccl.so.2", "libnccl.so", NULL};
  static const gs_cuda_lib_spec spec = {"nccl", names, NULL, "nccl"};
  nc.lib = gs_cuda_dlopen(&spec, nc.error, sizeof nc.error);
  if (!nc.lib) return;
  static const struct { const char *name; size_t offset; } fns[] = {
    {"ncclGetUniqueId", offsetof(__typeof__(nc), get_unique_id)}, {"ncclCommInitAll", offsetof(__typeof__(nc), comm_init_all)},
    {"ncclCommInitRank", offsetof(__typeof__(nc), comm_init_rank)}, {"ncclCommDestroy", offsetof(__typeof__(nc), comm_destroy)},
    {"ncclGroupStart", offsetof(__typeof__(nc), group_start)}, {"ncclGroupEnd", offsetof(__typeof__(nc), group_end)},
    {"ncclBroadcast", offsetof(__typeof__(nc), bcast)}, {"ncclReduce", offsetof(__typeof__(nc), reduce)},
    {"ncclAllReduce", offsetof(__typeof__(nc), all_reduce)}, {"ncclAllGather", offsetof(__typeof__(nc), all_gather)},
    {"ncclReduceScatter", offsetof(__typeof__(nc), reduce_scatter)},
    {"ncclGetErrorString", offsetof(__typeof__(nc), error_string)},
    {"ncclGetVersion", offsetof(__typeof__(nc), get_version)}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    void *f = dlsym(nc.lib, fns[i].name);
    if (!f) {
      snprintf(nc.error, sizeof nc.error, "NCCL was loaded but lacks %s (NCCL 2.10 or newer is needed)", fns[i].name);
      dlclose(nc.lib);
      nc.lib = NULL;
      return;
    }
    memcpy((char *)&nc + fns[i].offset, &f, sizeof f); /* POSIX: dlsym's pointer is the function's */
  }
}

static gs_status ready(void) {
  pthread_once(&load_once, load);
  return nc.lib ? GS_OK : gs_error("%s", nc.error);
}

/* A failed NCCL call; after a fault on a device (NCCL then reports an
 * unhandled CUDA error) the message says the context is lost, as every
 * CUDA failure does. */
static gs_status nccl_fail_at(int r, const char *what, int line) {
  const char *why = nc.error_string ? nc.error_string(r) : "unknown";
  char lost[1024];
  if (gs_cuda_context_lost(what, __FILE__, line, lost, sizeof lost))
    return gs_error("NCCL error in %s: %s (%d); %s", what, why, r, lost);
  return gs_error("NCCL error in %s: %s (%d)", what, why, r);
}
#define nccl_fail(r, what) nccl_fail_at((r), (what), __LINE__)
#define NCCL_CHECK(expr, what) do { int r_ = (expr); if (r_ != 0) return nccl_fail(r_, what); } while (0)

/* NCCL's type for a dtype, or -1 (int16 and bool have none). */
static int nccl_type(gs_dtype t) {
  switch (t) {
  case GS_FLOAT32: return NC_FLOAT32;
  case GS_FLOAT64: return NC_FLOAT64;
  case GS_FLOAT16: return NC_FLOAT16;
  case GS_BFLOAT16: return NC_BFLOAT16;
  case GS_INT64: return NC_INT64;
  case GS_INT32: return NC_INT32;
  case GS_INT8: return NC_INT8;
  case GS_UINT8: return NC_UINT8;
  default: return -1;
  }
}

/* nccl.h's NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since
 * NCCL 2.9 (major * 1000 + minor * 100 + patch before). */
static gs_status gs_nccl_version(int *major, int *minor, int *patch) {
  *major = *minor = *patch = 0;
  GS_TRY(ready());
  int code = 0;
  NCCL_CHECK(nc.get_version(&code), "ncclGetVersion");
  int base = code >= 10000 ? 10000 : 1000;
  *major = code / base;
  *minor = code % base / 100;
  *patch = code % 100;
  return GS_OK;
}

/* ---- one process, several devices: one clique, kept for its device list ---- */

static nccl_comm clique[64];
static int clique_devs[64], clique_n;

static gs_status clique_for(int n, const int *devs) {
  GS_TRY(ready());
  if (clique_n == n && memcmp(clique_devs, devs, sizeof(int) * (size_t)n) == 0) return GS_OK;
  for (int i = 0; i < clique_n; i++) nc.comm_destroy(clique[i]);
  clique_n = 0;
  NCCL_CHECK(nc.comm_init_all(clique, n, devs), "ncclCommInitAll");
  memcpy(clique_devs, devs, sizeof(int) * (size_t)n);
  clique_n = n;
  return GS_OK;
}

/* Runs the group; the calls were queued on each device's stream. */
static gs_status group_end(const char *what) {
  NCCL_CHECK(nc.group_end(), what);
  return GS_OK;
}

static gs_status gs_nccl_broadcast(gs_tensor *src, int root, int n, const int *devs, gs_tensor **outs) {
  GS_TRY(clique_for(n, devs));
  size_t bytes = (size_t)gs_numel(src) * gs_dtype_size(src->dtype);
  for (int i = 0; i < n; i++) outs[i] = NULL;
  gs_status s = GS_OK;
  for (int i = 0; i < n && s == GS_OK; i++) {
    if (i == root) { outs[i] = src; gs_tensor_retain(src); continue; }
    gs_device d = {GS_CUDA, devs[i]};
    s = gs_tensor_empty(d, src->dtype, src->ndim, src->shape, &outs[i]);
  }
  if (s == GS_OK) {
    NCCL_CHECK(nc.group_start(), "ncclGroupStart");
    for (int i = 0; i < n && s == GS_OK; i++) {
      cudaStream_t st;
      s = gs_cuda_stream(devs[i], &st);
      int r = s == GS_OK ? nc.bcast(gs_tensor_ptr(src), gs_tensor_ptr(outs[i]), bytes, NC_UINT8, root, clique[i], st) : 0;
      if (r != 0) s = nccl_fail(r, "ncclBroadcast");
    }
    gs_status e = group_end("ncclBroadcast"); /* always close the group */
    if (s == GS_OK) s = e;
  }
  if (s != GS_OK) { for (int i = 0; i < n; i++) { gs_tensor_release(outs[i]); outs[i] = NULL; } return s; }
  return GS_OK;
}

static gs_status gs_nccl_reduce_sum(gs_tensor *const *ins, int root, int n, const int *devs, gs_tensor *out,
                             bool *unsupported) {
  int type = nccl_type(out->dtype);
  *unsupported = type < 0;
  if (type < 0) return gs_error("NCCL has no type for %s", gs_dtype_name(out->dtype));
  GS_TRY(clique_for(n, devs));
  size_t count = (size_t)gs_numel(out);
  gs_status s = GS_OK;
  NCCL_CHECK(nc.group_start(), "ncclGroupStart");
  for (int i = 0; i < n && s == GS_OK; i++) {
    cudaStream_t st;
    s = gs_cuda_stream(devs[i], &st);
    void *recv = i == root ? gs_tensor_ptr(out) : NULL;
    int r = s == GS_OK ? nc.reduce(gs_tensor_ptr(ins[i]), recv, count, type, NC_SUM, root, clique[i], st) : 0;
    if (r != 0) s = nccl_fail(r, "ncclReduce");
  }
  gs_status e = group_end("ncclReduce");
  if (s != GS_OK) return s;
  return e;
}

/* ---- across processes: one communicator per process, on its device ---- */

static gs_status gs_nccl_unique_id(void *id, size_t n) {
  GS_TRY(ready());
  if (n != sizeof(nccl_id)) return gs_error("NCCL unique id: expected %zu bytes", sizeof(nccl_id));
  nccl_id u;
  NCCL_CHECK(nc.get_unique_id(&u), "ncclGetUniqueId");
  memcpy(id, &u, sizeof u);
  return GS_OK;
}

static gs_status gs_nccl_comm_init_rank(void **comm, int nranks, const void *id, int rank, int device) {
  GS_TRY(ready());
  cudaStream_t st;
  GS_TRY(gs_cuda_stream(device, &st)); /* makes the device current for ncclCommInitRank */
  nccl_id u;
  memcpy(&u, id, sizeof u);
  NCCL_CHECK(nc.comm_init_rank((nccl_comm *)comm, nranks, u, rank), "ncclCommInitRank");
  return GS_OK;
}

static void gs_nccl_comm_destroy(void *comm) {
  if (comm && nc.lib) nc.comm_destroy(comm);
}

static int nccl_op(gs_dist_op op) {
  switch (op) {
  case GS_DIST_SUM: return NC_SUM;
  case GS_DIST_AVG: return NC_AVG;
  case GS_DIST_PRODUCT: return NC_PROD;
  case GS_DIST_MAX: return NC_MAX;
  default: return NC_MIN;
  }
}

/* all_reduce: send == recv; broadcast: from root; all_gather: recv holds
 * nranks * count; reduce_scatter: send holds nranks * count. */
static gs_status gs_nccl_collective(void *comm, gs_coll_kind kind, gs_tensor *send, gs_tensor *recv, gs_dist_op op, int root) {
  int type = nccl_type(send->dtype);
  if (type < 0) return gs_error("the nccl backend has no type for %s tensors", gs_dtype_name(send->dtype));
  cudaStream_t st;
  int device = gs_tensor_device(send).index;
  GS_TRY(gs_cuda_stream(device, &st));
  size_t count = (size_t)gs_numel(kind == GS_COLL_REDUCE_SCATTER ? recv : send);
  int r = 0;
  const char *what = "";
  switch (kind) {
  case GS_COLL_ALL_REDUCE: what = "ncclAllReduce"; r = nc.all_reduce(gs_tensor_ptr(send), gs_tensor_ptr(recv), count, type, nccl_op(op), comm, st); break;
  case GS_COLL_BROADCAST: what = "ncclBroadcast"; r = nc.bcast(gs_tensor_ptr(send), gs_tensor_ptr(recv), count, type, root, comm, st); break;
  case GS_COLL_ALL_GATHER: what = "ncclAllGather"; r = nc.all_gather(gs_tensor_ptr(send), gs_tensor_ptr(recv), count, type, comm, st); break;
  default: what = "ncclReduceScatter"; r = nc.reduce_scatter(gs_tensor_ptr(send), gs_tensor_ptr(recv), count, type, nccl_op(op), comm, st); break;
  }
  if (r != 0) return nccl_fail(r, what);
  return GS_OK;
}

const gs_collectives gs_nccl_collectives = {
  .name = "nccl",
  .version = gs_nccl_version,
  .broadcast = gs_nccl_broadcast,
  .reduce_sum = gs_nccl_reduce_sum,
  .id_bytes = sizeof(nccl_id),
  .unique_id = gs_nccl_unique_id,
  .comm_init_rank = gs_nccl_comm_init_rank,
  .comm_destroy = gs_nccl_comm_destroy,
  .collective = gs_nccl_collective,
};

#endif
