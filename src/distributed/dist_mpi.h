/* dist_mpi.h: the MPI layer under torch.distributed (dist_mpi.c), used by
 * gs_dist.c only: Open MPI opened at run time, one communication thread
 * making every MPI call in the order the works were submitted. */
#ifndef DIST_MPI_H
#define DIST_MPI_H

#include "distributed/gs_dist.h"

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

#endif
