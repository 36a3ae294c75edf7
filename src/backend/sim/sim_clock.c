/* sim_clock.c: modelled device time of the simulated GPUs (see
 * sim_clock.h; formulas in docs/time-model.md). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "backend/sim/sim_clock.h"
#include "backend/sim/sim_queue.h"
#include "core/gs_gpu_model.h"
#include "core/gs_model_clock.h"
#include "core/gs_prof.h"

/* Modelled ends of a stream's recent tasks, by sequence number. Ends only
 * grow along a stream (FIFO), so a wait for a task older than the ring
 * may take the oldest end kept: never earlier than the task's own. The
 * ring is twice the launch queue's depth. */
#define RING (2 * GS_QUEUE_DEPTH)
typedef struct {
  double end[RING];
  uint64_t last;  /* seq of the last task given an end */
  double ready;   /* its end: when the stream's next task may start */
} ring;

enum { RES_SM, RES_H2D, RES_D2H, RES_COUNT };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ring *rings[GS_QUEUE_MAX_DEVICES][GS_QUEUE_STREAMS];
static double res_free[GS_QUEUE_MAX_DEVICES][RES_COUNT];

void gs_simclock_reset(void) {
  gs_mclock_models_changed();
  pthread_mutex_lock(&lock);
  for (int i = 0; i < GS_QUEUE_MAX_DEVICES; i++) {
    for (int k = 0; k < GS_QUEUE_STREAMS; k++) {
      free(rings[i][k]);
      rings[i][k] = NULL;
    }
    for (int r = 0; r < RES_COUNT; r++) res_free[i][r] = 0;
  }
  pthread_mutex_unlock(&lock);
}

static bool valid(int dev, int stream) {
  return dev >= 0 && dev < GS_QUEUE_MAX_DEVICES && stream >= 0 && stream < GS_QUEUE_STREAMS;
}

static double end_locked(int dev, int stream, uint64_t seq) {
  ring *r = valid(dev, stream) ? rings[dev][stream] : NULL;
  if (!r || seq == 0 || r->last == 0) return -1;
  if (seq >= r->last) return r->ready;
  if (r->last - seq >= RING) seq = r->last - RING + 1;
  return r->end[seq % RING];
}

double gs_simclock_end(int dev, int stream, uint64_t seq) {
  pthread_mutex_lock(&lock);
  double e = end_locked(dev, stream, seq);
  pthread_mutex_unlock(&lock);
  return e;
}

static double max2(double a, double b) { return a > b ? a : b; }

/* A task's modelled duration and the resource it occupies. */
static double duration(const gs_gpu_model *m, const gs_task *t, int *res) {
  *res = RES_SM;
  if (t->fixed_s >= 0) return t->fixed_s; /* the kernel lab worked it out (issue 30) */
  const gs_tensor *x0 = t->ntensors > 0 ? &t->x[0] : NULL;
  double bytes = (double)t->bytes;
  if (t->kind == GS_PROF_COPY) {
    bool d2d = strcmp(t->name, "copy_d2d") == 0;
    int src = d2d && t->ntensors > 1 ? t->b[1].device.index : -1;
    if (d2d && src == t->dev) /* inside one device: a kernel reading and writing the bytes */
      return gs_gpu_kernel_time(m, GS_UNIT_FP32, 0, 2 * bytes, x0 ? (double)gs_numel(x0) : 1);
    *res = RES_H2D; /* the engine of the copies into this device */
    if (d2d) return gs_gpu_copy_time(m, gs_gpu_model_of(src), GS_COPY_D2D_PEER, true, bytes);
    bool pinned = t->ntensors > 1 && t->b[1].pinned;
    return gs_gpu_copy_time(m, NULL, GS_COPY_H2D, pinned, bytes);
  }
  if (t->ntensors == 3 && strcmp(t->name, "mm") == 0 && t->x[0].ndim == 3 && t->x[1].ndim == 3) {
    /* c [B, M, N] = a [B, M, K] x b [B, K, N] */
    gs_gpu_unit u = gs_gpu_unit_for(m, x0->dtype, true);
    return gs_gpu_gemm_time(m, u, (double)x0->shape[1], (double)x0->shape[2], (double)t->x[1].shape[2],
                            (double)x0->shape[0], (double)gs_dtype_size(x0->dtype));
  }
  double elems = x0 ? (double)gs_numel(x0) : 1;
  double flops = t->flops ? (double)t->flops : elems;
  return gs_gpu_kernel_time(m, gs_gpu_unit_for(m, x0 ? x0->dtype : GS_FLOAT32, false), flops, bytes, elems);
}

double gs_simclock_task_time(const gs_task *t, int *engine) {
  const gs_gpu_model *m = gs_gpu_model_of(t->dev);
  int res = RES_SM;
  double d = m ? duration(m, t, &res) : -1;
  *engine = res == RES_SM ? 0 : 1;
  return d;
}

void gs_simclock_submit(const gs_task *t, int stream, uint64_t seq) {
  const gs_gpu_model *m = gs_gpu_model_of(t->dev);
  if (!m || !valid(t->dev, stream)) return;
  pthread_mutex_lock(&lock);
  ring *r = rings[t->dev][stream];
  if (!r && !(r = rings[t->dev][stream] = calloc(1, sizeof *r))) {
    pthread_mutex_unlock(&lock); /* no memory for the record: the task is simply not modelled */
    return;
  }
  double floor = r->ready, dur = 0;
  int res = -1;
  if (t->wseq) { /* waits for another stream's task: starts after its end */
    double e = end_locked(t->wdev, t->wstream, t->wseq);
    floor = max2(floor, e);
  }
  double now;
  if (!t->wseq && !t->event) { /* a kernel or a copy: the host pays the launch */
    now = gs_mclock_host_add(m->host_launch_s);
    dur = duration(m, t, &res);
  } else {
    now = gs_mclock_host_now();
  }
  double start = max2(now, floor);
  if (res >= 0) start = max2(start, res_free[t->dev][res]);
  double end = start + dur;
  if (res >= 0) res_free[t->dev][res] = end;
  r->end[seq % RING] = end;
  r->last = seq;
  r->ready = end;
  pthread_mutex_unlock(&lock);
}

uint64_t gs_simclock_wait_begin(int dev) { return gs_gpu_model_of(dev) ? gs_mclock_wait_begin() : 0; }

void gs_simclock_wait_end(int dev, int stream, uint64_t seq, uint64_t token) {
  const gs_gpu_model *m = gs_gpu_model_of(dev);
  if (!token || !m) return;
  pthread_mutex_lock(&lock);
  double e = end_locked(dev, stream, seq);
  pthread_mutex_unlock(&lock);
  gs_mclock_host_waited(token, e, m->host_sync_s);
}

void gs_simclock_host_copy(int dev, uint64_t bytes, bool pinned, uint64_t token) {
  const gs_gpu_model *m = gs_gpu_model_of(dev);
  if (!m || !valid(dev, 0)) return;
  /* the host clock once the real copy is taken out: the copy starts then */
  double h = gs_mclock_host_exclude(token);
  pthread_mutex_lock(&lock);
  double start = max2(h, res_free[dev][RES_D2H]);
  double end = start + gs_gpu_copy_time(m, NULL, GS_COPY_D2H, pinned, (double)bytes);
  res_free[dev][RES_D2H] = end;
  pthread_mutex_unlock(&lock);
  gs_mclock_host_waited(0, end, 0);
}
