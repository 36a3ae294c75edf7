/* dist_mpi.c: the MPI layer of torch.distributed. Open MPI is not linked:
 * libmpi.so.40 is opened with dlopen when a process group is first asked
 * for, so gshell (and the GPU bundle) builds and runs where Open MPI is
 * absent, and torch.distributed.is_available() is then false with the
 * loader's reason. The functions and predefined handles used are looked
 * up by name; handles are Open MPI's exported objects (MPI_COMM_WORLD is
 * &ompi_mpi_comm_world), which is Open MPI's ABI, stable since 3.0 --
 * MPICH's differs and is not supported.
 *
 * One communication thread makes every MPI call, MPI_Init_thread
 * included, running queued works in order, so MPI_THREAD_FUNNELED
 * suffices (Debian's Open MPI 4.1 offers MPI_THREAD_MULTIPLE too, but
 * nothing here needs it, and one caller keeps the ranks' collectives in
 * one order). Open MPI has no progress thread of its own (ompi_info:
 * "OMPI progress: no"): a non-blocking collective only advances inside
 * MPI calls, so this thread is what lets a collective proceed while the
 * caller computes.
 *
 * Waiting for the other ranks is where a blocking MPI call burns a core:
 * Open MPI spins until they arrive. On a machine with a core per rank
 * and nothing spare, that spin is taken from the caller's backward
 * pass. So the rendezvous (the agreement exchange that precedes every
 * payload) is a non-blocking MPI_Iallgather tested with a growing sleep
 * in between (see wait_request); once every rank has arrived the payload
 * runs as one blocking call, the fastest algorithm Open MPI has for it. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/gs_model_clock.h"
#include "distributed/dist_mpi.h"

/* The slice of Open MPI's ABI used here (mpi.h of Open MPI 3 to 5). */
typedef void *mpi_handle; /* MPI_Comm, MPI_Datatype, MPI_Op, MPI_Errhandler: pointers */
typedef void (mpi_user_fn)(void *, void *, int *, mpi_handle *);
#define MPI_IN_PLACE_ ((void *)1)
enum { MPI_THREAD_FUNNELED_ = 1, MPI_MAX_ERROR_STRING_ = 256 };

static struct {
  void *lib;
  char error[512];
  int (*init_thread)(int *, char ***, int, int *);
  int (*initialized)(int *);
  int (*finalize)(void);
  int (*comm_rank)(mpi_handle, int *);
  int (*comm_size)(mpi_handle, int *);
  int (*set_errhandler)(mpi_handle, mpi_handle);
  int (*allreduce)(const void *, void *, int, mpi_handle, mpi_handle, mpi_handle);
  int (*bcast)(void *, int, mpi_handle, int, mpi_handle);
  int (*allgather)(const void *, int, mpi_handle, void *, int, mpi_handle, mpi_handle);
  int (*iallgather)(const void *, int, mpi_handle, void *, int, mpi_handle, mpi_handle, mpi_handle *);
  int (*test)(mpi_handle *, int *, void *);
  int (*reduce_scatter_block)(const void *, void *, int, mpi_handle, mpi_handle, mpi_handle);
  int (*barrier)(mpi_handle);
  int (*op_create)(mpi_user_fn *, int, mpi_handle *);
  int (*error_string)(int, char *, int *);
  mpi_handle world, errors_return;
  mpi_handle t_float, t_double, t_int64, t_int32, t_int16, t_int8, t_uint8, t_uint16;
  mpi_handle op_sum, op_prod, op_max, op_min;
} mpi;

int gs_mpi_rank = 0, gs_mpi_size = 1;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
  /* GSHELL_MPI_LIB names another libmpi (an Open MPI outside the
   * loader's path) */
  const char *own = getenv("GSHELL_MPI_LIB");
  const char *names[] = {own && *own ? own : "libmpi.so.40", own && *own ? NULL : "libmpi.so"};
  char tried[400] = "";
  /* RTLD_GLOBAL: Open MPI's own plugins resolve libmpi's symbols */
  for (size_t i = 0; i < 2 && names[i] && !mpi.lib; i++) {
    mpi.lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    const char *why = mpi.lib ? NULL : dlerror();
    size_t k = strlen(tried);
    if (why && k + 1 < sizeof tried) snprintf(tried + k, sizeof tried - k, "%s%s", k ? "; " : "", why);
  }
  if (!mpi.lib) {
    snprintf(mpi.error, sizeof mpi.error, "Open MPI could not be loaded (%s): install Open MPI (Debian: "
             "openmpi-bin libopenmpi3) to use torch.distributed", tried);
    return;
  }
  static const struct { const char *name; size_t offset; bool object; } syms[] = {
#define F(field, name) {name, offsetof(__typeof__(mpi), field), false}
#define O(field, name) {name, offsetof(__typeof__(mpi), field), true}
    F(init_thread, "MPI_Init_thread"), F(initialized, "MPI_Initialized"), F(finalize, "MPI_Finalize"),
    F(comm_rank, "MPI_Comm_rank"), F(comm_size, "MPI_Comm_size"), F(set_errhandler, "MPI_Comm_set_errhandler"),
    F(allreduce, "MPI_Allreduce"), F(bcast, "MPI_Bcast"), F(allgather, "MPI_Allgather"),
    F(iallgather, "MPI_Iallgather"), F(test, "MPI_Test"),
    F(reduce_scatter_block, "MPI_Reduce_scatter_block"), F(barrier, "MPI_Barrier"), F(op_create, "MPI_Op_create"),
    F(error_string, "MPI_Error_string"),
    O(world, "ompi_mpi_comm_world"), O(errors_return, "ompi_mpi_errors_return"),
    O(t_float, "ompi_mpi_float"), O(t_double, "ompi_mpi_double"), O(t_int64, "ompi_mpi_int64_t"),
    O(t_int32, "ompi_mpi_int32_t"), O(t_int16, "ompi_mpi_int16_t"), O(t_int8, "ompi_mpi_int8_t"),
    O(t_uint8, "ompi_mpi_uint8_t"), O(t_uint16, "ompi_mpi_uint16_t"),
    O(op_sum, "ompi_mpi_op_sum"), O(op_prod, "ompi_mpi_op_prod"), O(op_max, "ompi_mpi_op_max"),
    O(op_min, "ompi_mpi_op_min"),
#undef F
#undef O
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = dlsym(mpi.lib, syms[i].name);
    if (!p) {
      snprintf(mpi.error, sizeof mpi.error, "the MPI library found lacks %s: torch.distributed needs Open MPI 3 or "
               "newer (other MPI implementations have a different ABI)", syms[i].name);
      dlclose(mpi.lib);
      mpi.lib = NULL;
      return;
    }
    /* functions: dlsym's pointer is the function (POSIX); objects: the
     * handle is the object's address */
    memcpy((char *)&mpi + syms[i].offset, &p, sizeof p);
  }
}

bool gs_mpi_load(const char **why) {
  pthread_once(&load_once, load);
  if (!mpi.lib && why) *why = mpi.error;
  return mpi.lib != NULL;
}

/* ---- float16 / bfloat16: MPI has no type; user ops on 16-bit words ---- */

#define HALF_OP(name, load, store, expr)                                       \
  static void name(void *in, void *inout, int *len, mpi_handle *dt) {          \
    (void)dt;                                                                   \
    const uint16_t *a = in;                                                     \
    uint16_t *b = inout;                                                        \
    for (int i = 0; i < *len; i++) {                                            \
      float x = load(a[i]), y = load(b[i]);                                     \
      b[i] = store(expr);                                                       \
    }                                                                           \
  }
HALF_OP(h_sum, gs_half_to_float, gs_float_to_half, x + y)
HALF_OP(h_prod, gs_half_to_float, gs_float_to_half, x * y)
HALF_OP(h_max, gs_half_to_float, gs_float_to_half, (x > y || isnan(x)) ? x : y)
HALF_OP(h_min, gs_half_to_float, gs_float_to_half, (x < y || isnan(x)) ? x : y)
HALF_OP(b_sum, gs_bf16_to_float, gs_float_to_bf16, x + y)
HALF_OP(b_prod, gs_bf16_to_float, gs_float_to_bf16, x * y)
HALF_OP(b_max, gs_bf16_to_float, gs_float_to_bf16, (x > y || isnan(x)) ? x : y)
HALF_OP(b_min, gs_bf16_to_float, gs_float_to_bf16, (x < y || isnan(x)) ? x : y)
static mpi_handle half_ops[2][4]; /* [bf16?][sum prod max min] */

static mpi_handle mpi_type(gs_dtype t) {
  switch (t) {
  case GS_FLOAT32: return mpi.t_float;
  case GS_FLOAT64: return mpi.t_double;
  case GS_FLOAT16: case GS_BFLOAT16: return mpi.t_uint16;
  case GS_INT64: return mpi.t_int64;
  case GS_INT32: return mpi.t_int32;
  case GS_INT16: return mpi.t_int16;
  case GS_INT8: return mpi.t_int8;
  default: return mpi.t_uint8; /* uint8, bool */
  }
}

/* avg is a sum divided afterwards; bool's sum and max are "or" (max of
 * 0/1 bytes), its product and min "and". */
static mpi_handle mpi_op(gs_dist_op op, gs_dtype t) {
  int k = op == GS_DIST_PRODUCT ? 1 : op == GS_DIST_MAX ? 2 : op == GS_DIST_MIN ? 3 : 0;
  if (t == GS_FLOAT16 || t == GS_BFLOAT16) return half_ops[t == GS_BFLOAT16][k];
  if (t == GS_BOOL) return (k == 0 || k == 2) ? mpi.op_max : mpi.op_min;
  return k == 0 ? mpi.op_sum : k == 1 ? mpi.op_prod : k == 2 ? mpi.op_max : mpi.op_min;
}

/* ---- the communication thread ---- */

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER, dcond = PTHREAD_COND_INITIALIZER;
static gs_dist_work *qhead, *qtail;
static pthread_t thread;
static bool thread_started;

static void fail_mpi(gs_dist_work *w, int code, const char *call) {
  char s[MPI_MAX_ERROR_STRING_ + 1] = "";
  int n = 0;
  if (mpi.error_string(code, s, &n) != 0) snprintf(s, sizeof s, "error %d", code);
  w->status = GS_ERR;
  snprintf(w->msg, sizeof w->msg, "torch.distributed.%s: %s failed: %s", w->what, call, s);
}

static const char *kind_name(int64_t k) {
  static const char *n[] = {"init", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier",
                            "broadcast", "destroy"};
  return k >= 0 && k < (int64_t)(sizeof n / sizeof n[0]) ? n[k] : "?";
}

/* "all_reduce(sum) float32 [4, 3]" from a description (see gs_dist.c). */
static void describe(const int64_t *m, char *buf, size_t n) {
  static const char *ops[] = {"sum", "avg", "product", "min", "max"};
  if (m[0] == GS_MPI_REFUSED) { /* (gs_dist_refuse) */
    snprintf(buf, n, "%s with arguments it refused (its own error says why)", kind_name(m[1]));
    return;
  }
  int len = snprintf(buf, n, "%s", kind_name(m[0]));
  if (m[0] == GS_MPI_ALL_REDUCE || m[0] == GS_MPI_REDUCE_SCATTER)
    len += snprintf(buf + len, n - (size_t)len, "(%s)", m[1] >= 0 && m[1] < 5 ? ops[m[1]] : "?");
  if (m[0] == GS_MPI_BCAST) len += snprintf(buf + len, n - (size_t)len, "(src=%lld)", (long long)m[2]);
  if (m[0] == GS_MPI_BARRIER || m[0] == GS_MPI_BCAST_BYTES) return;
  len += snprintf(buf + len, n - (size_t)len, " %s [", m[3] >= 0 && m[3] < GS_NDTYPES ? gs_dtype_name((gs_dtype)m[3]) : "?");
  for (int64_t d = 0; d < m[4] && d < GS_DIST_META_WORDS - 6 && len < (int)n; d++)
    len += snprintf(buf + len, n - (size_t)len, "%s%lld", d ? ", " : "", (long long)m[6 + d]);
  if (len < (int)n) snprintf(buf + len, n - (size_t)len, "]");
}

/* torch.clock()'s clock: with a modelled GPU, the host's modelled time
 * (issue 29), so a bucket's stamps compare with the step's */
double gs_mpi_now(void) { return gs_mclock_host_now(); }

/* Completes a non-blocking request without holding a core: a few quick
 * tests (the other ranks are often there already), then sleeps that
 * double from 10 us up to 500 us between tests, so a rank that arrives
 * early leaves its core to the computation going on beside it, and
 * notices the others at most 0.5 ms late. */
static int wait_request(mpi_handle *req) {
  long nap = 10000;
  for (int i = 0;; i++) {
    int flag = 0, r = mpi.test(req, &flag, NULL); /* NULL: MPI_STATUS_IGNORE in Open MPI */
    if (r != 0 || flag) return r;
    if (i < 8) continue;
    struct timespec ts = {0, nap};
    nanosleep(&ts, NULL);
    if (nap < 500000) nap *= 2;
  }
}

/* Every rank shares its description; any difference fails the call on
 * every rank with the same message (and no payload is exchanged). This
 * exchange is also where a rank waits for the others to arrive. */
/* A rank that ended (its exit's exchange met a call of this rank): no
 * later call can complete, and this rank's own exit skips the exchange
 * (issue 23: the peer used to wait in its collective forever). */
static int gone_rank = -1;

static bool check_agreement(gs_dist_work *w) {
  if (gone_rank >= 0) {
    w->status = GS_ERR;
    snprintf(w->msg, sizeof w->msg, "torch.distributed.%s: rank %d has ended (its script returned or exited): no "
             "collective can complete any more", w->what, gone_rank);
    return false;
  }
  int64_t *all = malloc(sizeof(int64_t) * GS_DIST_META_WORDS * (size_t)gs_mpi_size);
  if (!all) { w->status = GS_ERR; snprintf(w->msg, sizeof w->msg, "out of host memory"); return false; }
  mpi_handle req = NULL;
  int r = mpi.iallgather(w->meta, GS_DIST_META_WORDS, mpi.t_int64, all, GS_DIST_META_WORDS, mpi.t_int64, mpi.world,
                         &req);
  if (r == 0) r = wait_request(&req);
  if (r != 0) { free(all); fail_mpi(w, r, "MPI_Iallgather"); return false; }
  w->times.agreed = gs_mpi_now();
  int bad = -1, ended = -1;
  for (int i = 1; i < gs_mpi_size && bad < 0; i++)
    if (memcmp(all, all + (size_t)i * GS_DIST_META_WORDS, sizeof(int64_t) * GS_DIST_META_WORDS)) bad = i;
  for (int i = 0; i < gs_mpi_size && bad >= 0 && ended < 0; i++)
    if (all[(size_t)i * GS_DIST_META_WORDS] == GS_MPI_FINALIZE && i != gs_mpi_rank) ended = i;
  if (ended >= 0) { /* a rank's exit met this call: that rank made fewer calls */
    gone_rank = ended;
    w->status = GS_ERR;
    snprintf(w->msg, sizeof w->msg, "torch.distributed.%s: rank %d has ended (its script returned or exited) while "
             "this rank called %s: the ranks made different numbers of calls, and no collective can complete any "
             "more", w->what, ended, w->what);
  } else if (bad >= 0) {
    char a[200], b[200];
    describe(all, a, sizeof a);
    describe(all + (size_t)bad * GS_DIST_META_WORDS, b, sizeof b);
    w->status = GS_ERR;
    snprintf(w->msg, sizeof w->msg, "torch.distributed.%s: the ranks called different collectives: rank 0 called "
             "%s, rank %d called %s (every rank must make the same calls, in the same order, with tensors of the "
             "same shape and dtype)", w->what, a, bad, b);
  }
  free(all);
  return bad < 0;
}

/* Divides a float sum by the world size (avg). */
static void divide(gs_dist_work *w) {
  int64_t n = w->count;
  double k = (double)gs_mpi_size;
  switch (w->dtype) {
  case GS_FLOAT32: { float *p = w->recv; for (int64_t i = 0; i < n; i++) p[i] = (float)(p[i] / k); break; }
  case GS_FLOAT64: { double *p = w->recv; for (int64_t i = 0; i < n; i++) p[i] /= k; break; }
  case GS_FLOAT16: { uint16_t *p = w->recv; for (int64_t i = 0; i < n; i++) p[i] = gs_float_to_half((float)(gs_half_to_float(p[i]) / k)); break; }
  case GS_BFLOAT16: { uint16_t *p = w->recv; for (int64_t i = 0; i < n; i++) p[i] = gs_float_to_bf16((float)(gs_bf16_to_float(p[i]) / k)); break; }
  default: break;
  }
}

/* MPI counts are ints: big buffers go in pieces. */
#define PIECE ((int64_t)1 << 30)

static void run_init(gs_dist_work *w) {
  int inited = 0, provided = 0, r;
  mpi.initialized(&inited);
  if (!inited && (r = mpi.init_thread(NULL, NULL, MPI_THREAD_FUNNELED_, &provided)) != 0) {
    w->status = GS_ERR;
    snprintf(w->msg, sizeof w->msg, "torch.distributed.init_process_group: MPI_Init_thread failed (%d)", r);
    return;
  }
  if (!inited && provided < MPI_THREAD_FUNNELED_) {
    w->status = GS_ERR;
    snprintf(w->msg, sizeof w->msg, "torch.distributed.init_process_group: this MPI offers no thread support "
             "(MPI_THREAD_FUNNELED), which gshell's communication thread needs");
    return;
  }
  mpi.set_errhandler(mpi.world, mpi.errors_return);
  mpi.comm_rank(mpi.world, &gs_mpi_rank);
  mpi.comm_size(mpi.world, &gs_mpi_size);
  static mpi_user_fn *fns[2][4] = {{h_sum, h_prod, h_max, h_min}, {b_sum, b_prod, b_max, b_min}};
  for (int b = 0; b < 2; b++)
    for (int k = 0; k < 4; k++) mpi.op_create(fns[b][k], 1, &half_ops[b][k]);
}

static void run(gs_dist_work *w) {
  w->status = GS_OK;
  if (w->kind == GS_MPI_INIT) { run_init(w); return; }
  if (w->kind == GS_MPI_FINALIZE) {
    /* the exit's own exchange: a rank still waiting in a collective meets
     * it there and fails at once instead of waiting forever */
    if (gone_rank < 0 && gs_mpi_size > 1) (void)check_agreement(w);
    mpi.finalize();
    return;
  }
  if (!check_agreement(w)) return;
  mpi_handle t = mpi_type(w->dtype);
  size_t es = gs_dtype_size(w->dtype);
  int r = 0;
  switch (w->kind) {
  case GS_MPI_ALL_REDUCE:
    for (int64_t at = 0; at < w->count && r == 0; at += PIECE) {
      int n = (int)(w->count - at < PIECE ? w->count - at : PIECE);
      char *p = (char *)w->recv + at * (int64_t)es;
      r = mpi.allreduce(w->send == w->recv ? MPI_IN_PLACE_ : (char *)w->send + at * (int64_t)es, p, n, t,
                        mpi_op(w->op, w->dtype), mpi.world);
    }
    if (r) { fail_mpi(w, r, "MPI_Allreduce"); return; }
    if (w->op == GS_DIST_AVG) divide(w);
    return;
  case GS_MPI_BCAST:
  case GS_MPI_BCAST_BYTES:
    for (int64_t at = 0; at < w->count && r == 0; at += PIECE) {
      int n = (int)(w->count - at < PIECE ? w->count - at : PIECE);
      r = mpi.bcast((char *)w->recv + at * (int64_t)es, n, w->kind == GS_MPI_BCAST_BYTES ? mpi.t_uint8 : t, w->root,
                    mpi.world);
    }
    if (r) fail_mpi(w, r, "MPI_Bcast");
    return;
  case GS_MPI_ALL_GATHER:
    r = mpi.allgather(w->send, (int)w->count, t, w->recv, (int)w->count, t, mpi.world);
    if (r) fail_mpi(w, r, "MPI_Allgather");
    return;
  case GS_MPI_REDUCE_SCATTER:
    r = mpi.reduce_scatter_block(w->send, w->recv, (int)w->count, t, mpi_op(w->op, w->dtype), mpi.world);
    if (r) { fail_mpi(w, r, "MPI_Reduce_scatter_block"); return; }
    if (w->op == GS_DIST_AVG) divide(w);
    return;
  case GS_MPI_BARRIER:
    return; /* the agreement exchange above is the barrier */
  default:
    return;
  }
}

static void *comm_main(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&qlock);
    while (!qhead) pthread_cond_wait(&qcond, &qlock);
    gs_dist_work *w = qhead;
    qhead = w->next;
    if (!qhead) qtail = NULL;
    pthread_mutex_unlock(&qlock);
    w->times.started = gs_mpi_now();
    run(w);
    w->times.finished = gs_mpi_now();
    bool last = w->kind == GS_MPI_FINALIZE;
    pthread_mutex_lock(&qlock);
    w->done = true;
    pthread_cond_broadcast(&dcond);
    pthread_mutex_unlock(&qlock);
    if (last) return NULL;
  }
}

void gs_mpi_submit(gs_dist_work *w) {
  pthread_mutex_lock(&qlock);
  if (!thread_started) {
    /* The thread is detached: after an error the process may exit while
     * it waits inside MPI for ranks that will never come. */
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    thread_started = pthread_create(&thread, &a, comm_main, NULL) == 0;
    pthread_attr_destroy(&a);
    if (!thread_started) {
      w->status = GS_ERR;
      snprintf(w->msg, sizeof w->msg, "torch.distributed: cannot start the communication thread");
      w->done = true;
      pthread_mutex_unlock(&qlock);
      return;
    }
  }
  w->done = false;
  w->next = NULL;
  w->times.submitted = gs_mpi_now();
  if (qtail) qtail->next = w; else qhead = w;
  qtail = w;
  pthread_cond_signal(&qcond);
  pthread_mutex_unlock(&qlock);
}

/* Interruptible waits wake every 20 ms to look for Ctrl-C: a rank that
 * never arrives must not hold the prompt forever. */
bool gs_mpi_wait_done(gs_dist_work *w, bool interruptible) {
  pthread_mutex_lock(&qlock);
  while (!w->done) {
    if (interruptible && gs_interrupted && gs_interruptible()) break;
    if (!interruptible) { pthread_cond_wait(&dcond, &qlock); continue; }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20000000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    pthread_cond_timedwait(&dcond, &qlock, &ts);
  }
  bool done = w->done;
  pthread_mutex_unlock(&qlock);
  return done;
}

bool gs_mpi_poll_done(gs_dist_work *w) {
  pthread_mutex_lock(&qlock);
  bool d = w->done;
  pthread_mutex_unlock(&qlock);
  return d;
}

void gs_mpi_stop_thread(void) {
  pthread_mutex_lock(&qlock);
  thread_started = false; /* the finalize work ended it */
  pthread_mutex_unlock(&qlock);
}
