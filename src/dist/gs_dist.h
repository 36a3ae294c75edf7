/* gs_dist.h: torch.distributed's process group. The mpi backend runs on
 * Open MPI, opened at run time (dist_mpi.c), for tensors in host memory
 * (cpu and simulated devices); the nccl backend (cuda_nccl.c) runs real
 * GPU tensors, with its unique id exchanged over MPI. Every MPI call is
 * made by one communication thread, in the order collectives were
 * issued, so asynchronous all-reduces overlap the caller's work (and MPI
 * only needs MPI_THREAD_FUNNELED). Before each payload the ranks
 * exchange a small description of the call (kind, op, dtype, shape,
 * root) and all fail with the same message when they disagree, instead
 * of hanging or mixing data. */
#ifndef GS_DIST_H
#define GS_DIST_H

#include "ops/gs_ops.h"

typedef enum { GS_DIST_SUM, GS_DIST_AVG, GS_DIST_PRODUCT, GS_DIST_MIN, GS_DIST_MAX } gs_dist_op;
typedef enum { GS_DIST_BACKEND_MPI, GS_DIST_BACKEND_NCCL } gs_dist_backend;

/* Whether MPI can be loaded; *why says why not (a static string). */
bool gs_dist_available(const char **why);
/* Starts the process group (rank and size come from the launcher).
 * device: the CUDA ordinal for the nccl backend (ignored for mpi). */
gs_status gs_dist_init(gs_dist_backend be, int device);
bool gs_dist_is_initialized(void);
int gs_dist_rank(void);
int gs_dist_world_size(void);
int gs_dist_local_rank(void); /* from the launcher's environment, 0 without one */
gs_dist_backend gs_dist_get_backend(void);
gs_status gs_dist_destroy(void);
/* At process exit: ok finalizes MPI (every rank must get there); after an
 * error nothing is finalized, so the launcher sees the failure and stops
 * the other ranks instead of this one waiting for them. */
void gs_dist_exit(bool ok);

/* An asynchronous collective in flight. */
typedef struct gs_dist_work gs_dist_work;
/* When a work went through the communication thread (CLOCK_MONOTONIC
 * seconds): submitted by the caller, started by the thread (earlier
 * works done), agreed (every rank arrived: the payload starts), finished. */
typedef struct { double submitted, started, agreed, finished; } gs_dist_times;
/* Waits for *w. Done (ok or failed): frees it, sets *w = NULL, fills
 * times when non-NULL. Interrupted by Ctrl-C first: returns the
 * interrupt error and *w stays valid and in flight (wait again later). */
gs_status gs_dist_wait(gs_dist_work **w, gs_dist_times *times);
bool gs_dist_work_done(gs_dist_work *w);
/* Gives up on w without waiting (its Work was collected): the tensors it
 * holds are released once the communication thread is done with them. */
void gs_dist_abandon(gs_dist_work *w);

/* Every collective below: with async non-NULL the call returns at once
 * with a work to wait on (the tensors must not be touched until then);
 * else it waits. In place on t. */
gs_status gs_dist_all_reduce(gs_tensor *t, gs_dist_op op, gs_dist_work **async);
gs_status gs_dist_broadcast(gs_tensor *t, int src, gs_dist_work **async);
/* out (world_size * numel(t) elements, t's dtype and device) = every
 * rank's t in rank order. */
gs_status gs_dist_all_gather_into(gs_tensor *out, gs_tensor *t, gs_dist_work **async);
/* out (numel(in) / world_size elements) = op over ranks of this rank's
 * slice of in. */
gs_status gs_dist_reduce_scatter_from(gs_tensor *out, gs_tensor *in, gs_dist_op op, gs_dist_work **async);
gs_status gs_dist_barrier(gs_dist_work **async);
/* A call this rank refused before any exchange (its arguments are wrong
 * here, perhaps only here): the rank still takes part in the agreement
 * exchange, as a refusal, so every other rank's matching call fails too
 * instead of pairing with this rank's next call. `what` names the call
 * ("reduce_scatter"). Keeps the caller's error message; no-op without a
 * process group. */
void gs_dist_refuse(const char *what);

/* The MPI layer (dist_mpi.c), used by gs_dist.c only. */
typedef enum { GS_MPI_INIT, GS_MPI_ALL_REDUCE, GS_MPI_BCAST, GS_MPI_ALL_GATHER, GS_MPI_REDUCE_SCATTER,
               GS_MPI_BARRIER, GS_MPI_BCAST_BYTES, GS_MPI_FINALIZE,
               /* a description only: a call this rank refused (meta[1]: the kind it would have been) */
               GS_MPI_REFUSED } gs_mpi_kind;
#define GS_DIST_META_WORDS 24
struct gs_dist_work {
  gs_mpi_kind kind;
  gs_dist_op op;
  int root;
  gs_dtype dtype;
  void *send, *recv;              /* host memory; send may equal recv (in place) */
  int64_t count;                  /* elements per rank */
  int64_t meta[GS_DIST_META_WORDS]; /* what every rank must agree on */
  const char *what;               /* "all_reduce": for messages */
  /* filled by the communication thread */
  bool done;
  gs_status status;
  char msg[768];
  gs_dist_times times;
  uint64_t version[2];            /* of hold/copy_to's buffers at submit */
  /* for the caller: tensors held until the work is waited on, and a
   * result to copy back (a non-contiguous or staged tensor) */
  gs_tensor *hold[2];
  gs_tensor *copy_to, *copy_from;
  struct gs_dist_work *next;     /* in the communication thread's queue */
  struct gs_dist_work *next_abandoned; /* the caller's list (gs_dist.c) */
};
bool gs_mpi_load(const char **why);
/* Queues w on the communication thread (started by the first call). */
void gs_mpi_submit(gs_dist_work *w);
/* Blocks until w is done (true), or, when interruptible, until Ctrl-C
 * (false, w still in flight). */
bool gs_mpi_wait_done(gs_dist_work *w, bool interruptible);
double gs_mpi_now(void);
bool gs_mpi_poll_done(gs_dist_work *w);
void gs_mpi_stop_thread(void);
extern int gs_mpi_rank, gs_mpi_size;

#ifdef GS_HAVE_CUDA
/* cuda_nccl.c: the cross-process communicator of the nccl backend. */
gs_status gs_nccl_unique_id(void *id, size_t n); /* n = 128 */
gs_status gs_nccl_comm_init_rank(void **comm, int nranks, const void *id, int rank, int device);
void gs_nccl_comm_destroy(void *comm);
/* kind: 0 all_reduce, 1 broadcast, 2 all_gather, 3 reduce_scatter */
gs_status gs_nccl_collective(void *comm, int kind, gs_tensor *send, gs_tensor *recv, gs_dist_op op, int root);
#endif

#endif
