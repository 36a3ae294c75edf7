/* gs_dist.c: the process group's front: checks what can be checked on
 * this rank, describes each call for the ranks' agreement check, stages
 * non-contiguous tensors, and hands the payload to MPI (dist_mpi.c) or,
 * for real GPU tensors under the nccl backend, to the CUDA backend's
 * collective library (NCCL, core/gs_collectives.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "distributed/dist_mpi.h"

static bool initialized, mpi_started, exiting, destroyed;
static gs_dist_backend backend;
static void *nccl_comm;

/* The collective library of real GPUs' backend (NCCL), NULL in a build
 * without CUDA. */
static const gs_collectives *nccl(void) {
  const gs_backend *cuda = gs_backend_of_kind(GS_BACKEND_CUDA);
  return cuda ? cuda->collectives : NULL;
}

bool gs_dist_available(const char **why) { return gs_mpi_load(why); }
bool gs_dist_is_initialized(void) { return initialized; }
int gs_dist_rank(void) { return gs_mpi_rank; }
int gs_dist_world_size(void) { return gs_mpi_size; }
gs_dist_backend gs_dist_get_backend(void) { return backend; }

int gs_dist_local_rank(void) {
  const char *v = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!v) v = getenv("LOCAL_RANK");
  return v ? atoi(v) : 0;
}

static gs_dist_work *work_new(gs_mpi_kind kind, const char *what) {
  gs_dist_work *w = calloc(1, sizeof *w);
  if (w) { w->kind = kind; w->what = what; w->meta[0] = kind; }
  return w;
}

static void work_free(gs_dist_work *w) {
  gs_tensor_release(w->hold[0]);
  gs_tensor_release(w->hold[1]);
  gs_tensor_release(w->copy_to);
  gs_tensor_release(w->copy_from);
  free(w);
}

/* Works given up on (an interrupted blocking call, a Work collected
 * without wait()): tensors are refcounted without atomics, so they are
 * released here on the caller's thread, once the communication thread is
 * done with them, at the next call. */
static gs_dist_work *abandoned;

static void reap_abandoned(void) {
  for (gs_dist_work **p = &abandoned; *p;) {
    gs_dist_work *w = *p;
    if (gs_mpi_poll_done(w)) { *p = w->next_abandoned; work_free(w); }
    else p = &w->next_abandoned;
  }
}

void gs_dist_abandon(gs_dist_work *w) {
  if (!w) return;
  w->next_abandoned = abandoned;
  abandoned = w;
}

static uint64_t version_of(const gs_tensor *t) { return t ? t->buf->version : 0; }

/* The tensor a work writes into for the caller (its version is checked
 * and bumped at the end). */
static gs_tensor *target(const gs_dist_work *w) {
  if (w->copy_to) return w->copy_to;
  return w->kind == GS_MPI_BARRIER ? NULL : w->hold[0];
}

static void record_versions(gs_dist_work *w) {
  w->version[0] = version_of(target(w));
  w->version[1] = version_of(w->hold[1]);
}

/* Waits, copies a staged result back, frees w. */
gs_status gs_dist_wait(gs_dist_work **wp, gs_dist_times *times) {
  gs_dist_work *w = *wp;
  if (!gs_mpi_wait_done(w, true)) return gs_interrupted_error();
  *wp = NULL;
  gs_status s = w->status;
  char msg[sizeof w->msg];
  memcpy(msg, w->msg, sizeof msg);
  if (times) *times = w->times;
  gs_tensor *out = target(w);
  /* A write into the tensors while the collective had them is a race
   * whose result nobody can predict: say so instead of returning it. */
  if (s == GS_OK && (version_of(out) != w->version[0] || version_of(w->hold[1]) != w->version[1])) {
    snprintf(msg, sizeof msg, "torch.distributed.%s: a tensor of this collective was written to while the "
             "collective was in flight (its contents are now undefined); with async_op = true, leave the tensors "
             "alone until work:wait() returns", w->what);
    s = GS_ERR;
  }
  if (s == GS_OK && w->copy_to) s = gs_copy_(w->copy_to, w->copy_from);
  else if (s == GS_OK && out) out->buf->version++;
  work_free(w);
  if (s != GS_OK && msg[0]) return gs_error("%s", msg);
  return s;
}

bool gs_dist_work_done(gs_dist_work *w) { return gs_mpi_poll_done(w); }

/* Submits w; with async hands it to the caller, else waits. Ctrl-C
 * during the wait leaves w to finish on its own (abandoned). */
static gs_status submit(gs_dist_work *w, gs_dist_work **async) {
  reap_abandoned();
  record_versions(w);
  gs_mpi_submit(w);
  if (async) { *async = w; return GS_OK; }
  gs_dist_work *p = w;
  gs_status s = gs_dist_wait(&p, NULL);
  if (p) gs_dist_abandon(p);
  return s;
}

static gs_status run_sync(gs_dist_work *w) { return submit(w, NULL); }

/* For a work that writes into the caller's stack: no interrupt. */
static gs_status run_to_end(gs_dist_work *w) {
  gs_mpi_submit(w);
  gs_mpi_wait_done(w, false);
  gs_dist_work *p = w;
  return gs_dist_wait(&p, NULL);
}

/* Processes that are not gshell's binary (stock lua5.4 with torch.so)
 * do not call gs_dist_exit: MPI is finalized at exit when the script
 * destroyed its process group, the sign that it got to its end. */
static void finalize_if_destroyed(void) {
  if (destroyed && !initialized) gs_dist_exit(true);
}

gs_status gs_dist_init(gs_dist_backend be, int device) {
  if (initialized)
    return gs_error("torch.distributed.init_process_group: the default process group is already initialized "
                    "(call destroy_process_group() first)");
  const char *why = NULL;
  if (!gs_mpi_load(&why)) return gs_error("torch.distributed is not available: %s", why);
  if (be == GS_DIST_BACKEND_NCCL && !nccl())
    return gs_error("torch.distributed.init_process_group: the nccl backend needs a gshell built with CUDA "
                    "(this one was built without it); use backend='mpi'");
  if (!mpi_started) {
    gs_dist_work *w = work_new(GS_MPI_INIT, "init_process_group");
    if (!w) return gs_error_code(GS_ERR_OOM, "out of host memory");
    GS_TRY(run_sync(w));
    mpi_started = true;
    atexit(finalize_if_destroyed);
  }
  if (be == GS_DIST_BACKEND_NCCL) {
    /* rank 0 makes the id, MPI carries it to the others */
    char id[128] = {0};
    gs_status s = gs_mpi_rank == 0 ? nccl()->unique_id(id, sizeof id) : GS_OK;
    gs_dist_work *w = work_new(GS_MPI_BCAST_BYTES, "init_process_group");
    if (!w) return gs_error_code(GS_ERR_OOM, "out of host memory");
    /* a rank that failed to make the id still joins the broadcast, with
     * an id of zeros that the others refuse below */
    w->dtype = GS_UINT8;
    w->recv = id;
    w->count = sizeof id;
    gs_status b = run_to_end(w);
    if (b != GS_OK) return b;
    if (s != GS_OK) return s;
    static const char zeros[128];
    if (memcmp(id, zeros, sizeof id) == 0)
      return gs_error("torch.distributed.init_process_group: rank 0 could not create the NCCL id (see its error)");
    GS_TRY(nccl()->comm_init_rank(&nccl_comm, gs_mpi_size, id, gs_mpi_rank, device));
  }
  backend = be;
  initialized = true;
  destroyed = false;
  return GS_OK;
}

gs_status gs_dist_destroy(void) {
  if (!initialized)
    return gs_error("torch.distributed.destroy_process_group: no process group is initialized");
  if (nccl_comm) nccl()->comm_destroy(nccl_comm);
  nccl_comm = NULL;
  initialized = false; /* MPI itself stays up until exit: it cannot start twice */
  destroyed = true;
  return GS_OK;
}

void gs_dist_exit(bool ok) {
  if (!mpi_started || exiting) return;
  exiting = true;
  if (!ok) return; /* see gs_dist.h: the launcher stops the others */
  reap_abandoned();
  gs_dist_work *w = work_new(GS_MPI_FINALIZE, "destroy_process_group");
  if (!w) return;
  gs_mpi_submit(w);
  /* Ctrl-C here (a rank that never comes) leaves MPI as after an error */
  if (!gs_mpi_wait_done(w, true)) return;
  free(w);
  gs_mpi_stop_thread();
}

/* ---- the calls ---- */

static gs_status need_group(const char *what) {
  if (!initialized)
    return gs_error("torch.distributed.%s: the default process group has not been initialized; call "
                    "torch.distributed.init_process_group() first (and launch with mpirun -np N gshell script.lua)", what);
  return GS_OK;
}

static void describe(gs_dist_work *w, const gs_tensor *t, gs_dist_op op, int root) {
  w->op = op;
  w->meta[1] = op;
  w->meta[2] = root;
  w->meta[3] = t->dtype;
  w->meta[4] = t->ndim;
  w->meta[5] = gs_numel(t);
  for (int d = 0; d < t->ndim; d++) w->meta[6 + d] = t->shape[d];
  w->dtype = t->dtype;
}

static bool on_real_gpu(const gs_tensor *t) { return !gs_tensor_host_addressable(t); }

/* The mpi backend reads host memory: the cpu and simulated devices. */
static gs_status check_host(const char *what, const gs_tensor *t) {
  if (!on_real_gpu(t)) return GS_OK;
  char dev[32];
  gs_device_name(gs_tensor_device(t), dev, sizeof dev);
  if (backend == GS_DIST_BACKEND_NCCL) return GS_OK;
  return gs_error("torch.distributed.%s: the mpi backend works on cpu and simulated-device tensors, this one is on "
                  "%s (a real GPU): use init_process_group({backend = 'nccl'}) for GPU tensors", what, dev);
}

static gs_status check_op(const char *what, const gs_tensor *t, gs_dist_op op) {
  if (op == GS_DIST_AVG && !gs_dtype_is_float(t->dtype))
    return gs_error("torch.distributed.%s: op 'avg' needs a floating-point tensor, got %s (use 'sum' and divide)",
                    what, gs_dtype_name(t->dtype));
  return GS_OK;
}

/* w works in place on t, or on a contiguous copy written back after. */
static gs_status stage_inplace(gs_dist_work *w, gs_tensor *t) {
  if (gs_is_contiguous(t)) {
    GS_TRY(gs_tensor_host_wait(t, NULL)); /* MPI reads and writes it on this thread */
    gs_tensor_retain(t);
    w->hold[0] = t;
    w->send = w->recv = gs_tensor_ptr(t);
    return GS_OK;
  }
  gs_tensor *c;
  GS_TRY(gs_clone(t, &c));
  gs_status st = gs_tensor_host_wait(c, NULL);
  if (st != GS_OK) { gs_tensor_release(c); return st; }
  gs_tensor_retain(t);
  w->copy_to = t;
  w->copy_from = c;
  w->send = w->recv = gs_tensor_ptr(c);
  return GS_OK;
}

/* nccl backend, real GPU tensor: the ranks agree over MPI, then NCCL
 * queues the payload on the device's stream. */
static gs_status nccl_call(gs_dist_work *w, gs_coll_kind kind, gs_tensor *send, gs_tensor *recv, gs_dist_op op, int root) {
  gs_mpi_kind k = w->kind;
  w->kind = GS_MPI_BARRIER; /* agreement only */
  w->meta[0] = k;
  GS_TRY(run_sync(w));
  return nccl()->collective(nccl_comm, kind, send, recv, op, root);
}

/* A collective on NCCL (in == out for all_reduce and broadcast):
 * contiguous operands, the result copied back into out when it was not.
 * Frees w. */
static gs_status nccl_run(gs_dist_work *w, gs_coll_kind kind, gs_tensor *in, gs_tensor *out, gs_dist_op op, int root) {
  gs_tensor *ci = NULL, *co = NULL;
  gs_status s = gs_contiguous(in, &ci);
  if (s == GS_OK) s = gs_contiguous(out, &co);
  if (s == GS_OK) s = nccl_call(w, kind, ci, co, op, root);
  else free(w);
  if (s == GS_OK && co != out) s = gs_copy_(out, co);
  else if (s == GS_OK) out->buf->version++;
  gs_tensor_release(ci);
  gs_tensor_release(co);
  return s;
}

static gs_mpi_kind kind_of(const char *what) {
  if (strstr(what, "all_reduce")) return GS_MPI_ALL_REDUCE;
  if (strstr(what, "broadcast")) return GS_MPI_BCAST;
  if (strstr(what, "all_gather")) return GS_MPI_ALL_GATHER;
  if (strstr(what, "reduce_scatter")) return GS_MPI_REDUCE_SCATTER;
  return GS_MPI_BARRIER;
}

void gs_dist_refuse(const char *what) {
  if (!initialized || gs_mpi_size < 2) return;
  char saved[1024];
  snprintf(saved, sizeof saved, "%s", gs_last_error());
  gs_dist_work *w = work_new(GS_MPI_BARRIER, what); /* the exchange only, then nothing */
  if (w) {
    w->meta[0] = GS_MPI_REFUSED;
    w->meta[1] = kind_of(what);
    (void)run_sync(w); /* every rank refused the same way: agreed; else they all fail */
  }
  gs_error("%s", saved);
}

/* A check of this rank's arguments: a failure is refused with the others
 * (gs_dist_refuse) before it is returned. */
static gs_status refused(const char *what, gs_status st) {
  if (st != GS_OK && st != GS_ERR_OOM) gs_dist_refuse(what);
  return st;
}

gs_status gs_dist_all_reduce(gs_tensor *t, gs_dist_op op, gs_dist_work **async) {
  if (async) *async = NULL;
  GS_TRY(need_group("all_reduce"));
  GS_TRY(refused("all_reduce", check_host("all_reduce", t)));
  GS_TRY(refused("all_reduce", check_op("all_reduce", t, op)));
  gs_dist_work *w = work_new(GS_MPI_ALL_REDUCE, "all_reduce");
  if (!w) return gs_error_code(GS_ERR_OOM, "out of host memory");
  describe(w, t, op, 0);
  if (on_real_gpu(t)) return nccl_run(w, GS_COLL_ALL_REDUCE, t, t, op, 0);
  gs_status s = stage_inplace(w, t);
  if (s != GS_OK) { free(w); return s; }
  w->count = gs_numel(t);
  return submit(w, async);
}

gs_status gs_dist_broadcast(gs_tensor *t, int src, gs_dist_work **async) {
  if (async) *async = NULL;
  GS_TRY(need_group("broadcast"));
  GS_TRY(refused("broadcast", check_host("broadcast", t)));
  if (src < 0 || src >= gs_mpi_size)
    return refused("broadcast", gs_error("torch.distributed.broadcast: src %d is not a rank (ranks are 0 to %d)",
                                         src, gs_mpi_size - 1));
  gs_dist_work *w = work_new(GS_MPI_BCAST, "broadcast");
  if (!w) return gs_error_code(GS_ERR_OOM, "out of host memory");
  describe(w, t, GS_DIST_SUM, src);
  w->root = src;
  if (on_real_gpu(t)) return nccl_run(w, GS_COLL_BROADCAST, t, t, GS_DIST_SUM, src);
  gs_status s = stage_inplace(w, t);
  if (s != GS_OK) { free(w); return s; }
  w->count = gs_numel(t);
  return submit(w, async);
}

static gs_status check_pair(const char *what, const gs_tensor *big, const gs_tensor *small, const char *bigname) {
  int64_t n = gs_numel(small) * gs_mpi_size;
  if (big->dtype != small->dtype)
    return gs_error("torch.distributed.%s: %s is %s but the tensor is %s (they must have the same dtype)", what,
                    bigname, gs_dtype_name(big->dtype), gs_dtype_name(small->dtype));
  if (gs_numel(big) != n)
    return gs_error("torch.distributed.%s: %s must hold world_size (%d) x %lld = %lld elements, it holds %lld", what,
                    bigname, gs_mpi_size, (long long)gs_numel(small), (long long)n, (long long)gs_numel(big));
  if (!gs_device_equal(gs_tensor_device(big), gs_tensor_device(small)))
    return gs_error("torch.distributed.%s: %s and the tensor must be on the same device", what, bigname);
  if ((uint64_t)gs_numel(small) > (uint64_t)INT32_MAX)
    return gs_error("torch.distributed.%s: at most 2^31-1 elements per rank", what);
  return GS_OK;
}

/* A collective from one tensor into another: contiguous copies where
 * needed (the result is copied back into out after). */
static gs_status two_tensor(gs_dist_work *w, gs_tensor *out, gs_tensor *in) {
  gs_tensor *ci = NULL, *co = NULL;
  GS_TRY(gs_contiguous(in, &ci));
  gs_status s = gs_is_contiguous(out) ? GS_OK : gs_clone(out, &co);
  /* MPI reads and writes them on this thread: their queued work first */
  if (s == GS_OK) s = gs_tensor_host_wait(ci, NULL);
  if (s == GS_OK) s = gs_tensor_host_wait(co ? co : out, NULL);
  if (s != GS_OK) { gs_tensor_release(ci); gs_tensor_release(co); return s; }
  w->hold[1] = ci;
  gs_tensor_retain(out);
  if (co) { w->copy_to = out; w->copy_from = co; }
  else w->hold[0] = out; /* its version is bumped after the write */
  w->send = gs_tensor_ptr(ci);
  w->recv = gs_tensor_ptr(co ? co : out);
  return GS_OK;
}

/* all_gather (the small tensor is in, the big one out) and
 * reduce_scatter (the big one in, the small one out). */
static gs_status gather_or_scatter(gs_mpi_kind kind, const char *what, gs_tensor *out, gs_tensor *in, gs_dist_op op,
                                   gs_dist_work **async) {
  if (async) *async = NULL;
  bool gather = kind == GS_MPI_ALL_GATHER;
  gs_tensor *small = gather ? in : out;
  GS_TRY(need_group(what));
  GS_TRY(refused(what, check_host(what, in)));
  if (!gather) GS_TRY(refused(what, check_op(what, in, op)));
  GS_TRY(refused(what, check_pair(what, gather ? out : in, small, gather ? "the output" : "the input")));
  gs_dist_work *w = work_new(kind, what);
  if (!w) return gs_error_code(GS_ERR_OOM, "out of host memory");
  describe(w, small, op, 0);
  w->count = gs_numel(small);
  if (on_real_gpu(in)) return nccl_run(w, gather ? GS_COLL_ALL_GATHER : GS_COLL_REDUCE_SCATTER, in, out, op, 0);
  gs_status s = two_tensor(w, out, in);
  if (s != GS_OK) { free(w); return s; }
  return submit(w, async);
}

gs_status gs_dist_all_gather_into(gs_tensor *out, gs_tensor *t, gs_dist_work **async) {
  return gather_or_scatter(GS_MPI_ALL_GATHER, "all_gather", out, t, GS_DIST_SUM, async);
}

gs_status gs_dist_reduce_scatter_from(gs_tensor *out, gs_tensor *in, gs_dist_op op, gs_dist_work **async) {
  return gather_or_scatter(GS_MPI_REDUCE_SCATTER, "reduce_scatter", out, in, op, async);
}

gs_status gs_dist_barrier(gs_dist_work **async) {
  if (async) *async = NULL;
  GS_TRY(need_group("barrier"));
  gs_dist_work *w = work_new(GS_MPI_BARRIER, "barrier");
  if (!w) return gs_error_code(GS_ERR_OOM, "out of host memory");
  return submit(w, async);
}
