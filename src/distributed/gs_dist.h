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

#include "core/gs_collectives.h"
#include "ops/gs_ops.h"

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

#endif
