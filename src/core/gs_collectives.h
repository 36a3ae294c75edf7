/* gs_collectives.h: a backend's own collective library, reached through
 * the optional `collectives` slot of its table (NCCL for real GPUs, in
 * src/backend/cuda/cuda_nccl.c). torch.cuda.comm and torch.distributed
 * (src/distributed/) use it where a device's backend has one and fall back to
 * the engine's copies (single process) or MPI (processes) where not, so
 * nothing above the backends tests which backend a device has. */
#ifndef GS_COLLECTIVES_H
#define GS_COLLECTIVES_H

#include "core/gs_tensor.h"

typedef enum { GS_DIST_SUM, GS_DIST_AVG, GS_DIST_PRODUCT, GS_DIST_MIN, GS_DIST_MAX } gs_dist_op;
typedef enum { GS_COLL_ALL_REDUCE, GS_COLL_BROADCAST, GS_COLL_ALL_GATHER, GS_COLL_REDUCE_SCATTER } gs_coll_kind;

typedef struct gs_collectives {
  const char *name; /* "nccl" */
  /* The library's version; opening it is the first call's job, so a
   * missing library is an error saying where it was looked for. */
  gs_status (*version)(int *major, int *minor, int *patch);
  /* ---- one process, several devices of this backend; contiguous tensors ---- */
  /* outs[i] (allocated here, on devs[i]) = src (on devs[root]; outs[root] is src). */
  gs_status (*broadcast)(gs_tensor *src, int root, int n, const int *devs, gs_tensor **outs);
  /* out (on devs[root], allocated by the caller) = sum of ins[i] (on devs[i]).
   * Fails with *unsupported set when the library has no type for the dtype. */
  gs_status (*reduce_sum)(gs_tensor *const *ins, int root, int n, const int *devs, gs_tensor *out,
                          bool *unsupported);
  /* ---- across processes: a communicator made from an id that rank 0
   * creates and the caller carries to the other ranks ---- */
  size_t id_bytes;
  gs_status (*unique_id)(void *id, size_t n);
  gs_status (*comm_init_rank)(void **comm, int nranks, const void *id, int rank, int device);
  void (*comm_destroy)(void *comm);
  gs_status (*collective)(void *comm, gs_coll_kind kind, gs_tensor *send, gs_tensor *recv, gs_dist_op op,
                          int root);
} gs_collectives;

#endif
