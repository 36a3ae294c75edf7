/* sim_queue.c: streams, tasks, waits and events for devices whose kernels
 * run on host threads (see sim_queue.h). One mutex per stream guards its
 * queue; `completed` is also read without it (acquire) by waiters that
 * only need to know whether a sequence number has been reached. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backend/sim/sim_clock.h"
#include "backend/sim/sim_prof.h"
#include "core/gs_parallel.h"
#include "core/gs_prof.h"
#include "backend/sim/sim_queue.h"

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  gs_task *head, *tail;          /* queue */
  gs_task *finished;             /* ran, still holding a host buffer (released on the host) */
  uint64_t enqueued;             /* seq of the last task queued (host only) */
  _Atomic uint64_t completed;    /* seq of the last task finished */
  uint64_t cancel_upto;          /* tasks up to this seq are dropped, not run (only at exit) */
  _Atomic int pending;           /* tasks queued or running (read without the lock by spinners) */
  int waiters;
  bool sleeping, started, stop;
  pthread_t thread;
  int dev, id;
} stream;

/* A mark of failed work: the buffer (by qid) and the error's message;
 * taint_only: the buffer is good (a checked index) but what is computed
 * from it is not, so only tasks reading it pass the mark on. */
typedef struct { uint64_t qid; bool taint_only; int origin; char msg[448]; } mark;
#define MAX_MARKS 1024 /* per device; beyond, the oldest mark is forgotten */

typedef struct {
  stream s[GS_QUEUE_STREAMS];
  int current, next_pool;
  gs_devflag flag;
  /* Recycled tasks, one list per device: a task is taken on the host for
   * any of the device's streams and given back by whichever stream ran it
   * (a list per stream leaked every task submitted to a stream other than
   * the current one). Taken after a stream's lock, never before. */
  pthread_mutex_t spare_lock;
  gs_task *spare;
  pthread_mutex_t err_lock;
  char err[512];                  /* a kernel that failed: its message, until reported */
  pthread_mutex_t mark_lock;      /* marks of failed work (see "marks" below) */
  mark *marks;
  int nmarks, capmarks;
  _Atomic uint64_t busy_ns, kernels;
} device;

struct gs_event {
  _Atomic int refs;
  bool timing, recorded;
  int dev, stream;
  uint64_t seq;
  uint64_t config;                /* the configuration it was recorded in (config_gen) */
  _Atomic uint64_t stamp_ns;      /* when the marker ran (0: not yet, or dropped) */
  _Atomic uint64_t generation;    /* bumped by each record: only its own marker stamps */
  double mstamp;                  /* its modelled time (sim_clock.h), <0: not modelled */
};

static device devs[GS_QUEUE_MAX_DEVICES];
static int ndevs, cores_each = 1;
static _Atomic int any_marks;     /* some device has a mark: workers look inputs up */
/* Bumped by each gs_queue_configure: an event recorded before names a
 * stream whose sequence numbers started again, so it is refused. */
static uint64_t config_gen;

static uint64_t now_ns(void) { return gs_prof_now_ns(); }

static stream *stream_of(int dev, int id) { return &devs[dev].s[id]; }
static uint64_t completed_of(stream *s) { return atomic_load_explicit(&s->completed, memory_order_acquire); }

/* ---- marks of failed work ----
 * A task that fails, or finds an error in its data (its device's record
 * counted a raise while it ran), marks the buffer it wrote (x[0]) with the
 * error's message; a task that reads a marked buffer marks what it writes
 * with the same message. The device error itself is reported once, at the
 * first wait (gs_devflag.h); a host read of a marked buffer fails every
 * time after that, as every read fails after a sticky CUDA error, so the
 * undefined values are never shown as if they were good. Marks name
 * buffers by qid, which is never reused. */

static bool find_mark(int dev, uint64_t qid, bool taint, char *msg, size_t len, int *origin) {
  if (!qid || !atomic_load_explicit(&any_marks, memory_order_acquire)) return false;
  device *d = &devs[dev];
  bool found = false;
  pthread_mutex_lock(&d->mark_lock);
  for (int i = d->nmarks - 1; i >= 0 && !found; i--)
    if (d->marks[i].qid == qid && (taint || !d->marks[i].taint_only)) {
      if (msg) snprintf(msg, len, "%s", d->marks[i].msg);
      if (origin) *origin = d->marks[i].origin;
      found = true;
    }
  pthread_mutex_unlock(&d->mark_lock);
  return found;
}

static void add_mark(int dev, uint64_t qid, bool taint_only, int origin, const char *msg) {
  device *d = &devs[dev];
  pthread_mutex_lock(&d->mark_lock);
  if (d->nmarks == MAX_MARKS) {
    memmove(d->marks, d->marks + 1, (size_t)(MAX_MARKS - 1) * sizeof *d->marks);
    d->nmarks--;
  }
  if (d->nmarks == d->capmarks) {
    int cap = d->capmarks ? d->capmarks * 2 : 8;
    mark *m = realloc(d->marks, (size_t)cap * sizeof *m);
    if (m) { d->marks = m; d->capmarks = cap; }
  }
  if (d->nmarks < d->capmarks) {
    d->marks[d->nmarks].qid = qid;
    d->marks[d->nmarks].taint_only = taint_only;
    d->marks[d->nmarks].origin = origin;
    snprintf(d->marks[d->nmarks].msg, sizeof d->marks[d->nmarks].msg, "%s", msg);
    d->nmarks++;
    atomic_store_explicit(&any_marks, 1, memory_order_release);
  }
  pthread_mutex_unlock(&d->mark_lock);
}

/* After a task ran: the mark its written buffer gets, if any. */
static void mark_output(int dev, const gs_task *t, gs_status st, uint32_t raised0) {
  if (t->ntensors == 0 || !t->b[0].qid) return;
  device *d = &devs[dev];
  char msg[448];
  int origin = dev;
  if (st != GS_OK) {
    snprintf(msg, sizeof msg, "an op queued earlier on cuda:%d failed: %s: %s", dev, t->name, gs_last_error());
  } else if (__atomic_load_n(&d->flag.raised, __ATOMIC_ACQUIRE) != raised0) {
    char name[32];
    snprintf(name, sizeof name, "cuda:%d", dev);
    gs_devflag_message(&d->flag, name, msg, sizeof msg);
    char *why = strstr(msg, " (the op was queued earlier");
    if (why) *why = 0; /* said when the error itself was reported */
  } else {
    bool found = false;
    for (int k = 1; k < t->ntensors && !found; k++) {
      const gs_buffer *b = &t->b[k];
      if (b->device.type == GS_CUDA && b->device.index >= 0 && b->device.index < ndevs)
        found = find_mark(b->device.index, b->qid, true, msg, sizeof msg, &origin);
    }
    if (!found) return;
  }
  add_mark(dev, t->b[0].qid, t->check_only, origin, msg);
}

/* ---- the worker ---- */

static void record_failure(device *d, const gs_task *t) {
  pthread_mutex_lock(&d->err_lock);
  if (!d->err[0]) snprintf(d->err, sizeof d->err, "%s: %s", t->name, gs_last_error());
  pthread_mutex_unlock(&d->err_lock);
}

static void wait_for(stream *s, uint64_t seq) {
  if (completed_of(s) >= seq) return;
  pthread_mutex_lock(&s->lock);
  s->waiters++;
  while (completed_of(s) < seq) pthread_cond_wait(&s->done, &s->lock);
  s->waiters--;
  pthread_mutex_unlock(&s->lock);
}

static void run_task(stream *s, gs_task *t, bool dropped) {
  device *d = &devs[s->dev];
  if (t->wseq) { /* a wait: returns at once when that work was dropped too */
    wait_for(stream_of(t->wdev, t->wstream), t->wseq);
    return;
  }
  if (t->event) { /* a marker of an earlier record of the event stamps nothing */
    if (atomic_load_explicit(&t->event->generation, memory_order_acquire) == t->wseq_gen)
      atomic_store_explicit(&t->event->stamp_ns, dropped ? 0 : now_ns(), memory_order_release);
    return;
  }
  if (dropped || !t->run) return;
  uint32_t raised0 = __atomic_load_n(&d->flag.raised, __ATOMIC_ACQUIRE);
  uint64_t t0 = now_ns();
  gs_status st = t->run(t);
  uint64_t t1 = now_ns();
  if (st != GS_OK) record_failure(d, t);
  mark_output(s->dev, t, st, raised0);
  atomic_fetch_add_explicit(&d->busy_ns, t1 - t0, memory_order_relaxed);
  atomic_fetch_add_explicit(&d->kernels, 1, memory_order_relaxed);
  if (gs_prof_on()) gs_simprof_record(t, s->id, t0, t1);
}

/* After a task a worker looks for the next one for a few microseconds
 * before sleeping, so a loop of small ops does not pay a wake-up each. */
#define SPIN_ROUNDS 2000

static void give_back(int dev, gs_task *t) {
  device *d = &devs[dev];
  pthread_mutex_lock(&d->spare_lock);
  t->next = d->spare;
  d->spare = t;
  pthread_mutex_unlock(&d->spare_lock);
}

static void *worker(void *arg) {
  stream *s = arg;
  gs_interrupt_hold = 1; /* a kernel always runs to its end (drops happen between tasks) */
  gs_workers *w = gs_workers_create(s->id == 0 ? cores_each : 1);
  gs_workers_bind(w);
  pthread_mutex_lock(&s->lock);
  for (;;) {
    if (!s->head && !s->stop) {
      pthread_mutex_unlock(&s->lock);
      for (int k = 0; k < SPIN_ROUNDS && atomic_load_explicit(&s->pending, memory_order_relaxed) == 0; k++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      pthread_mutex_lock(&s->lock);
    }
    while (!s->head && !s->stop) {
      s->sleeping = true;
      pthread_cond_wait(&s->wake, &s->lock);
      s->sleeping = false;
    }
    if (!s->head) break;
    gs_task *t = s->head;
    s->head = t->next;
    if (!s->head) s->tail = NULL;
    bool dropped = t->seq <= s->cancel_upto;
    pthread_mutex_unlock(&s->lock);
    run_task(s, t, dropped);
    pthread_mutex_lock(&s->lock);
    atomic_store_explicit(&s->completed, t->seq, memory_order_release);
    s->pending--;
    if (t->event && atomic_fetch_sub(&t->event->refs, 1) == 1) free(t->event);
    t->event = NULL;
    if (t->keep) { t->next = __atomic_load_n(&s->finished, __ATOMIC_RELAXED); __atomic_store_n(&s->finished, t, __ATOMIC_RELEASE); }
    else give_back(s->dev, t);
    if (s->waiters) pthread_cond_broadcast(&s->done);
  }
  pthread_mutex_unlock(&s->lock);
  gs_workers_bind(NULL);
  gs_workers_destroy(w);
  return NULL;
}

static void reap(stream *s);

/* ---- configuration ---- */

static void stop_stream(stream *s) {
  if (s->started) {
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
  }
  reap(s);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->wake);
  pthread_cond_destroy(&s->done);
}

/* At exit the running kernels finish first: a worker still inside a
 * kernel while the C library and OpenBLAS tear themselves down would crash
 * (registered after OpenBLAS loaded, so it runs before its destructor).
 * The tasks that have not started are dropped: nothing can read their
 * results any more (a script stopped by Ctrl-C ends at once, not after
 * the rest of its queue). */
static void drain_at_exit(void) {
  for (int i = 0; i < ndevs; i++)
    for (int k = 0; k < GS_QUEUE_STREAMS; k++) {
      stream *s = stream_of(i, k);
      if (!s->started) continue;
      pthread_mutex_lock(&s->lock);
      s->cancel_upto = s->enqueued;
      pthread_mutex_unlock(&s->lock);
    }
  for (int i = 0; i < ndevs; i++) gs_queue_drain_device(i);
}

void gs_queue_configure(int n, int cores) {
  static bool ready;
  if (!ready) atexit(drain_at_exit);
  if (ready)
    for (int i = 0; i < GS_QUEUE_MAX_DEVICES; i++) {
      gs_queue_drain_device(i);
      gs_queue_collect(i);
      for (int k = 0; k < GS_QUEUE_STREAMS; k++) stop_stream(&devs[i].s[k]);
      for (gs_task *t = devs[i].spare, *nx; t; t = nx) {
        nx = t->next;
        free(t);
      }
      pthread_mutex_destroy(&devs[i].spare_lock);
      pthread_mutex_destroy(&devs[i].err_lock);
      pthread_mutex_destroy(&devs[i].mark_lock);
      free(devs[i].marks);
    }
  memset(devs, 0, sizeof devs);
  atomic_store(&any_marks, 0);
  config_gen++;
  for (int i = 0; i < GS_QUEUE_MAX_DEVICES; i++) {
    pthread_mutex_init(&devs[i].err_lock, NULL);
    pthread_mutex_init(&devs[i].spare_lock, NULL);
    pthread_mutex_init(&devs[i].mark_lock, NULL);
    for (int k = 0; k < GS_QUEUE_STREAMS; k++) {
      stream *s = &devs[i].s[k];
      pthread_mutex_init(&s->lock, NULL);
      pthread_cond_init(&s->wake, NULL);
      pthread_cond_init(&s->done, NULL);
      s->dev = i;
      s->id = k;
    }
  }
  ndevs = n < 0 ? 0 : n > GS_QUEUE_MAX_DEVICES ? GS_QUEUE_MAX_DEVICES : n;
  cores_each = cores < 1 ? 1 : cores;
  gs_simclock_reset();
  ready = true;
}

int gs_queue_devices(void) { return ndevs; }
int gs_queue_cores(void) { return cores_each; }
gs_devflag *gs_queue_flag(int dev) { return &devs[dev].flag; }

int gs_queue_current(int dev) { return devs[dev].current; }
void gs_queue_set_current(int dev, int id) { devs[dev].current = id; }
int gs_queue_pool_stream(int dev) {
  device *d = &devs[dev];
  d->next_pool = d->next_pool % GS_QUEUE_POOL + 1;
  return d->next_pool;
}

void gs_queue_busy(int dev, uint64_t *busy, uint64_t *kernels) {
  *busy = atomic_load_explicit(&devs[dev].busy_ns, memory_order_relaxed);
  *kernels = atomic_load_explicit(&devs[dev].kernels, memory_order_relaxed);
}

/* ---- tasks ---- */

/* Host buffers kept alive by finished tasks are released here, on the
 * host thread, where refcounts are touched. */
static void reap(stream *s) {
  if (!__atomic_load_n(&s->finished, __ATOMIC_ACQUIRE)) return;
  pthread_mutex_lock(&s->lock);
  gs_task *f = __atomic_load_n(&s->finished, __ATOMIC_RELAXED);
  __atomic_store_n(&s->finished, NULL, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&s->lock);
  while (f) {
    gs_task *nx = f->next;
    gs_buffer_release(f->keep);
    f->keep = NULL;
    give_back(s->dev, f);
    f = nx;
  }
}

gs_task *gs_task_new(int dev, const char *name, gs_task_fn run) {
  device *d = &devs[dev];
  pthread_mutex_lock(&d->spare_lock);
  gs_task *t = d->spare;
  if (t) d->spare = t->next;
  pthread_mutex_unlock(&d->spare_lock);
  if (!t && !(t = malloc(sizeof *t))) { gs_error_code(GS_ERR_OOM, "out of host memory queuing %s", name); return NULL; }
  t->next = NULL;
  t->dev = dev;
  t->run = run;
  t->name = name;
  t->kind = GS_PROF_KERNEL;
  t->bytes = t->flops = 0;
  t->m0 = -1;
  t->ntensors = 0;
  t->keep = NULL;
  t->has_args = false;
  t->wseq = 0;
  t->event = NULL;
  t->check_only = false;
  t->fixed_s = -1;
  t->nextra = 0;
  return t;
}

void gs_task_tensor(gs_task *t, const gs_tensor *x) {
  int k = t->ntensors++;
  t->b[k] = *x->buf;
  t->x[k] = *x;
  t->x[k].buf = &t->b[k];
  t->x[k].grad = NULL;
  t->x[k].grad_fn = NULL;
  t->orig[k] = x->buf;
  t->bytes += (uint64_t)gs_numel(x) * gs_dtype_size(x->dtype);
}

static void note_use(gs_buffer *b, int dev, int id, uint64_t seq) {
  for (int i = 0; i < b->nuses; i++)
    if (b->uses[i].device == dev && b->uses[i].stream == id) { b->uses[i].seq = seq; return; }
  /* forget uses that have finished before giving up on exactness */
  int n = 0;
  for (int i = 0; i < b->nuses; i++)
    if (completed_of(stream_of(b->uses[i].device, b->uses[i].stream)) < b->uses[i].seq) b->uses[n++] = b->uses[i];
  b->nuses = (uint8_t)n;
  if (n == GS_BUFFER_USES) { b->uses_lost = true; return; }
  b->uses[b->nuses++] = (gs_use){(int16_t)dev, (int16_t)id, seq};
}

/* any_op: the wait may stop even inside an op that holds interrupts off
 * (an in-place write), because that op has queued nothing yet */
static bool need_interrupt(bool any_op) { return gs_interrupted && (any_op || gs_interruptible()); }

/* Waits until stream s completed seq; Ctrl-C stops the wait (the host's,
 * as in CUDA), never the device: the work queued so far runs on, so every
 * tensor it fills holds its right value once it is read (that read waits
 * for it). Polls the flag every 20 ms while blocked. */
static gs_status host_wait_stream_real(stream *s, uint64_t seq, bool any_op, bool *waited) {
  if (completed_of(s) >= seq) return GS_OK;
  uint64_t t0 = gs_prof_on() ? now_ns() : 0;
  bool stopped = false;
  pthread_mutex_lock(&s->lock);
  s->waiters++;
  while (completed_of(s) < seq) {
    if (need_interrupt(any_op)) { stopped = true; break; }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    pthread_cond_timedwait(&s->done, &s->lock, &ts);
  }
  s->waiters--;
  pthread_mutex_unlock(&s->lock);
  if (stopped) return gs_interrupted_error();
  if (t0) *waited = true;
  return GS_OK;
}

/* The wait, and on a device that models a GPU the host clock's jump to
 * the work's modelled end (issue 29, sim_clock.h). The profile's "wait"
 * event is on the host's clock, after that jump: on a modelled device
 * every wait is one (the host waits in the model even when this machine
 * had already computed the work), elsewhere only a wait that blocked. */
static gs_status host_wait_stream_ex(stream *s, uint64_t seq, bool any_op) {
  uint64_t c0 = gs_prof_on() ? gs_prof_clock_ns() : 0;
  uint64_t token = gs_simclock_wait_begin(s->dev);
  bool waited = false;
  gs_status st = host_wait_stream_real(s, seq, any_op, &waited);
  gs_simclock_wait_end(s->dev, s->id, seq, token);
  if (c0 && st == GS_OK && (waited || token)) {
    /* on the host's lane, naming the device and stream waited for */
    gs_prof_event e = {"wait", GS_PROF_SYNC, GS_CUDA, s->dev, s->id, c0, gs_prof_clock_ns(), 0, 0,
                       token != 0, GS_BOUND_HOST, 0};
    gs_prof_record(&e);
  }
  return st;
}

static gs_status host_wait_stream(stream *s, uint64_t seq) { return host_wait_stream_ex(s, seq, false); }


/* Whether task t, queued inside a hold, may write what the caller holds:
 * its written tensor (x[0], unless it only checks data) is a buffer made
 * before the hold began (a qid at most gs_hold_qid; 0 is a buffer that is
 * not the queue's, such as host memory), or a raw copy whose target is not
 * known. Waits and event markers write nothing. A temporary the held op
 * made (a number as a 0-d tensor, a result computed before it is copied
 * in) is not the caller's: a Ctrl-C may still stop the op after queuing
 * work into one (issue 23: x:add_(1) queued a fill first, and its add then
 * waited for room in a full queue deaf to the interrupt). */
static bool writes_callers(const gs_task *t) {
  if (t->wseq || t->event) return false;
  if (t->ntensors == 0) return t->run != NULL;
  if (t->check_only) return false;
  uint64_t q = t->orig[0]->qid;
  return q == 0 || q <= gs_hold_qid;
}

gs_status gs_task_submit_on(gs_task *t, int id, uint64_t *seqp) {
  stream *s = stream_of(t->dev, id);
  reap(s);
  /* a full queue: wait for room, as a CUDA launch blocks on a full queue.
   * Ctrl-C stops this wait also inside an in-place op that has queued
   * nothing yet (the caller's tensor stays as before); one that queued
   * part of its work waits and queues the rest (as after). */
  if (s->pending >= GS_QUEUE_DEPTH) {
    gs_status st = host_wait_stream_ex(s, s->enqueued - GS_QUEUE_DEPTH / 2, gs_hold_queued == 0);
    if (st != GS_OK) {
      if (t->keep) gs_buffer_release(t->keep);
      free(t);
      return st;
    }
  }
  if (!s->started) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    int rc = pthread_create(&s->thread, &attr, worker, s);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      if (t->keep) gs_buffer_release(t->keep);
      int dev = t->dev;
      free(t);
      return gs_error("cannot start the worker thread of cuda:%d stream %d: %s", dev, id, strerror(rc));
    }
    s->started = true;
  }
  /* (read before the task is queued: the worker may run and recycle it
   * as soon as it is linked in) */
  bool counts = !gs_interruptible() && writes_callers(t);
  uint64_t seq = s->enqueued + 1;
  t->seq = seq;
  gs_simclock_submit(t, id, seq); /* its modelled time (issue 29), before the worker may take it */
  if (gs_prof_on() && !t->wseq && !t->event) gs_simprof_model(t, id, seq);
  for (int k = 0; k < t->ntensors; k++) note_use(t->orig[k], t->dev, id, seq);
  for (int k = 0; k < t->nextra; k++) note_use(t->extra[k], t->dev, id, seq);
  pthread_mutex_lock(&s->lock);
  s->enqueued = seq;
  t->next = NULL;
  if (s->tail) s->tail->next = t;
  else s->head = t;
  s->tail = t;
  s->pending++;
  if (s->sleeping) pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  if (counts) gs_hold_queued++;
  if (seqp) *seqp = seq;
  return GS_OK;
}

gs_status gs_task_submit(gs_task *t) { return gs_task_submit_on(t, devs[t->dev].current, NULL); }

/* ---- host waits ---- */

/* Reports (and clears) what went wrong on the device since its last
 * synchronisation: a failed kernel, or an error found in the data. */
static gs_status take_errors(int dev) {
  device *d = &devs[dev];
  char name[32];
  snprintf(name, sizeof name, "cuda:%d", dev);
  char msg[512] = "";
  pthread_mutex_lock(&d->err_lock);
  if (d->err[0]) {
    snprintf(msg, sizeof msg, "%s", d->err);
    d->err[0] = 0;
  }
  pthread_mutex_unlock(&d->err_lock);
  if (msg[0]) {
    gs_devflag_take(&d->flag, name); /* one report at a time; the record goes with it */
    return gs_error("an op queued earlier on %s failed: %s", name, msg);
  }
  return gs_devflag_take(&d->flag, name);
}

gs_status gs_queue_sync_stream(int dev, int id, const char *what) {
  GS_TRY(gs_sync_note(what));
  stream *s = stream_of(dev, id);
  GS_TRY(host_wait_stream(s, s->enqueued));
  reap(s);
  return take_errors(dev);
}

gs_status gs_queue_wait_seq(int dev, int id, uint64_t seq, const char *what, bool report) {
  GS_TRY(gs_sync_note(what));
  stream *s = stream_of(dev, id);
  GS_TRY(host_wait_stream(s, seq));
  reap(s);
  return report ? take_errors(dev) : GS_OK;
}

static gs_status wait_device_ex(int dev, bool any_op) {
  for (int k = 0; k < GS_QUEUE_STREAMS; k++) {
    stream *s = stream_of(dev, k);
    if (!s->started) continue;
    GS_TRY(host_wait_stream_ex(s, s->enqueued, any_op));
    reap(s);
  }
  return GS_OK;
}

static gs_status wait_device(int dev) { return wait_device_ex(dev, false); }

gs_status gs_queue_sync_device(int dev, const char *what) {
  GS_TRY(gs_sync_note(what));
  GS_TRY(wait_device(dev));
  gs_queue_collect(dev);
  return take_errors(dev);
}

bool gs_queue_stream_idle(int dev, int id) {
  stream *s = stream_of(dev, id);
  return completed_of(s) >= s->enqueued;
}

void gs_queue_drain_device(int dev) {
  for (int k = 0; k < GS_QUEUE_STREAMS; k++) {
    stream *s = stream_of(dev, k);
    if (s->started) wait_for(s, s->enqueued);
  }
}

/* any_op: the wait may stop inside an in-place op too (see
 * gs_buffer_host_wait_before_write) */
static gs_status buffer_host_wait(gs_buffer *b, const char *what, bool any_op) {
  int dev = b->device.index;
  GS_TRY(gs_sync_note(what));
  if (b->uses_lost) {
    for (int i = 0; i < ndevs; i++) GS_TRY(wait_device_ex(i, any_op));
    b->uses_lost = false;
    b->nuses = 0;
  }
  for (int i = 0; i < b->nuses; i++) {
    stream *s = stream_of(b->uses[i].device, b->uses[i].stream);
    GS_TRY(host_wait_stream_ex(s, b->uses[i].seq, any_op));
    reap(s);
  }
  gs_status st = take_errors(dev);
  for (int i = 0; i < b->nuses; i++)
    if (st == GS_OK && b->uses[i].device != dev) st = take_errors(b->uses[i].device);
  b->nuses = 0;
  char msg[448];
  int origin;
  if (st == GS_OK && find_mark(dev, b->qid, false, msg, sizeof msg, &origin)) {
    /* computed from faulty work on another device whose error was not
     * reported yet: that report comes first (the record was written
     * before the mark; its fields are read atomically) */
    if (origin != dev) st = take_errors(origin);
    if (st == GS_OK) st = gs_error("this tensor holds the undefined result of work that failed (reported before): %s", msg);
  }
  return st;
}

gs_status gs_buffer_host_wait(gs_buffer *b, const char *what) { return buffer_host_wait(b, what, false); }

/* (issue 23: `x:copy_(y)` into a CPU tensor waited deaf to Ctrl-C for
 * y's queued work, since the copy holds interrupts off; nothing of x is
 * written before this wait ends) */
gs_status gs_buffer_host_wait_before_write(gs_buffer *b, const char *what) {
  return buffer_host_wait(b, what, gs_hold_queued == 0);
}

/* ---- buffer lifetime ---- */

void gs_queue_adopt(gs_buffer *b) {
  int dev = b->device.index, id = devs[dev].current;
  b->stream = (int16_t)id;
  b->nuses = 0;
  b->uses_lost = false;
  b->qid = atomic_fetch_add_explicit(&gs_buffer_qids, 1, memory_order_relaxed) + 1;
  stream *s = stream_of(dev, id);
  /* the block may have been used by work this stream queued before */
  if (s->enqueued > completed_of(s)) b->uses[b->nuses++] = (gs_use){(int16_t)dev, (int16_t)id, s->enqueued};
}

bool gs_queue_can_free(const gs_buffer *b) {
  if (b->uses_lost) return false;
  for (int i = 0; i < b->nuses; i++) {
    const gs_use *u = &b->uses[i];
    bool own = u->device == b->device.index && u->stream == b->stream;
    if (!own && completed_of(stream_of(u->device, u->stream)) < u->seq) return false;
  }
  return true;
}

/* A pending block is kept as a copy of its buffer header (the header
 * itself goes back to the engine), chained through `data` of a small
 * record. */
typedef struct pending { gs_buffer b; gs_queue_free_fn fn; struct pending *next; } pending;
static pending *pending_list[GS_QUEUE_MAX_DEVICES];

void gs_queue_defer_free(gs_buffer *b, gs_queue_free_fn fn) {
  int dev = b->device.index;
  pending *p = malloc(sizeof *p);
  if (!p) { /* no record: wait for the device instead, then free */
    gs_queue_drain_device(dev);
    fn(dev, b->data, b->stream);
    return;
  }
  p->b = *b;
  p->fn = fn;
  p->next = pending_list[dev];
  pending_list[dev] = p;
}

void gs_queue_collect(int dev) {
  pending **at = &pending_list[dev];
  while (*at) {
    pending *p = *at;
    if (gs_queue_can_free(&p->b) && !p->b.uses_lost) {
      *at = p->next;
      p->fn(dev, p->b.data, p->b.stream);
      free(p);
    } else if (p->b.uses_lost) {
      bool idle = true;
      for (int i = 0; i < ndevs && idle; i++)
        for (int k = 0; k < GS_QUEUE_STREAMS && idle; k++) idle = gs_queue_stream_idle(i, k);
      if (idle) p->b.uses_lost = false;
      else at = &p->next;
    } else {
      at = &p->next;
    }
  }
}

/* ---- events ---- */

gs_event *gs_event_new(bool timing) {
  gs_event *e = calloc(1, sizeof *e);
  if (!e) { gs_error_code(GS_ERR_OOM, "out of host memory creating an event"); return NULL; }
  atomic_store(&e->refs, 1);
  e->timing = timing;
  return e;
}

void gs_event_release(gs_event *e) {
  if (e && atomic_fetch_sub(&e->refs, 1) == 1) free(e);
}

gs_status gs_event_record(gs_event *e, int dev, int id) {
  gs_task *t = gs_task_new(dev, "record_event", NULL);
  if (!t) return GS_ERR_OOM;
  atomic_fetch_add(&e->refs, 1);
  t->wseq_gen = atomic_fetch_add_explicit(&e->generation, 1, memory_order_acq_rel) + 1;
  atomic_store_explicit(&e->stamp_ns, 0, memory_order_release);
  t->event = e;
  uint64_t seq;
  gs_status st = gs_task_submit_on(t, id, &seq);
  if (st != GS_OK) { gs_event_release(e); return st; }
  e->recorded = true;
  e->dev = dev;
  e->stream = id;
  e->seq = seq;
  e->config = config_gen;
  e->mstamp = gs_simclock_end(dev, id, seq);
  return GS_OK;
}

/* An event recorded before torch._sim_configure replaced the devices names
 * a stream that no longer exists: refused rather than waited for forever. */
static gs_status check_config(const gs_event *e, const char *what) {
  if (!e->recorded || e->config == config_gen) return GS_OK;
  return gs_error("%s: this event was recorded on simulated GPUs that have been reconfigured since "
                  "(torch._sim_configure); record it again", what);
}

bool gs_event_recorded(const gs_event *e, int *dev) {
  if (dev) *dev = e->dev;
  return e->recorded;
}

static bool event_done(const gs_event *e) {
  return !e->recorded || completed_of(stream_of(e->dev, e->stream)) >= e->seq;
}

gs_status gs_event_query(gs_event *e, bool *done) {
  GS_TRY(check_config(e, "Event.query"));
  *done = event_done(e);
  return GS_OK;
}

gs_status gs_event_synchronize(gs_event *e) {
  if (!e->recorded) return GS_OK;
  GS_TRY(check_config(e, "Event.synchronize"));
  GS_TRY(gs_sync_note("Event.synchronize"));
  GS_TRY(host_wait_stream(stream_of(e->dev, e->stream), e->seq));
  return take_errors(e->dev);
}

gs_status gs_event_elapsed(gs_event *a, gs_event *b, double *ms) {
  if (!a->timing || !b->timing)
    return gs_error("elapsed_time: both events must be created with {enable_timing = true}");
  if (!a->recorded || !b->recorded)
    return gs_error("elapsed_time: both events must be recorded before calculating elapsed time");
  GS_TRY(check_config(a, "elapsed_time"));
  GS_TRY(check_config(b, "elapsed_time"));
  if (!event_done(a) || !event_done(b))
    return gs_error("elapsed_time: both events must have completed (call e:synchronize() or "
                    "torch.cuda.synchronize() first)");
  if (a->mstamp >= 0 && b->mstamp >= 0) { /* both on modelled devices: the modelled time */
    *ms = (b->mstamp - a->mstamp) * 1e3;
    return GS_OK;
  }
  uint64_t ta = atomic_load_explicit(&a->stamp_ns, memory_order_acquire);
  uint64_t tb = atomic_load_explicit(&b->stamp_ns, memory_order_acquire);
  if (!ta || !tb) return gs_error("elapsed_time: an event's marker never ran; record it again");
  *ms = ((double)tb - (double)ta) / 1e6;
  return GS_OK;
}

gs_status gs_queue_wait_event(int dev, int id, gs_event *e) {
  if (!e->recorded) return GS_OK; /* as CUDA: waiting for an unrecorded event is a no-op */
  GS_TRY(check_config(e, "Stream.wait_event"));
  if (completed_of(stream_of(e->dev, e->stream)) >= e->seq) return GS_OK;
  gs_task *t = gs_task_new(dev, "wait_event", NULL);
  if (!t) return GS_ERR_OOM;
  t->wdev = e->dev;
  t->wstream = e->stream;
  t->wseq = e->seq;
  return gs_task_submit_on(t, id, NULL);
}
