/* sim_queue.h: asynchronous queues for devices whose kernels run on host
 * threads (the simulated GPUs), with CUDA's semantics:
 *
 *   - each device has streams: 0 is the default one, 1..GS_QUEUE_POOL a
 *     pool that torch.cuda.Stream() draws from round-robin (as PyTorch's
 *     stream pool does); each stream is a FIFO of tasks run in order by a
 *     worker thread of its own, started on first use;
 *   - the host thread validates an op, packages its kernel as a task
 *     (copies of the tensor headers: the caller may free its tensors at
 *     once) and queues it on the device's current stream;
 *   - every buffer remembers the last task of each stream that used it
 *     (gs_buffer.uses), so a host read waits for exactly the work it needs;
 *   - streams of one device, and streams of different devices, run at the
 *     same time; they order each other only through events (wait_event,
 *     wait_stream, and the engine's cross-device copies);
 *   - errors a kernel finds in the data, or a kernel that fails, surface at
 *     the next synchronising call on that device (gs_devflag.h);
 *   - a wait is interrupted by Ctrl-C: the host stops waiting, the device
 *     does not (as in CUDA): every queued task still runs, so the tensors
 *     it fills hold their right values when they are read (only at exit
 *     are the tasks that have not started dropped).
 *
 * Everything here is called from the host thread, except what the workers
 * do inside; the workers never call back into the allocator or Lua. */
#ifndef GS_SIM_QUEUE_H
#define GS_SIM_QUEUE_H

#include "core/gs_backend.h"
#include "core/gs_devflag.h"
#include "core/gs_streams.h"
#include "core/gs_tensor.h"

#define GS_QUEUE_MAX_DEVICES 64
#define GS_QUEUE_POOL 32
#define GS_QUEUE_STREAMS (GS_QUEUE_POOL + 1)
/* Tasks a stream may hold before the host waits for room (CUDA's launch
 * queue is about this deep). */
#define GS_QUEUE_DEPTH 1024
#define GS_TASK_TENSORS 4

typedef struct gs_task gs_task;
typedef gs_status (*gs_task_fn)(gs_task *t);

/* A kernel as queued: its function, copies of its tensors' headers and
 * buffers (x[k].buf points at b[k]), and its arguments. */
struct gs_task {
  gs_task *next;
  int dev;
  uint64_t seq;
  gs_task_fn run;
  const char *name;    /* for the profiler and error messages */
  int kind;            /* gs_prof_kind */
  uint64_t bytes, flops;
  /* while a profile records, on a device that models a GPU: the task's
   * modelled start and end (s, the host's clock), what bound it and its
   * unit (gs_prof_event's fields); m0 < 0: not modelled */
  double m0, m1;
  uint8_t bound, unit;
  int ntensors;
  gs_tensor x[GS_TASK_TENSORS];
  gs_buffer b[GS_TASK_TENSORS];
  gs_buffer *orig[GS_TASK_TENSORS]; /* the callers' buffers: their uses are updated at submit */
  gs_buffer *keep;     /* a host buffer kept alive until the task ran (released on the host) */
  bool check_only;     /* writes nothing (a data check): an error it finds marks what later reads x[0] */
  /* arguments, as the kernel needs them */
  int op, dim;
  bool flag, has_args;
  double args[2];
  gs_scalar scalar;
  gs_random_spec rnd;
  uint64_t seed, offset;
  int64_t size;
  gs_conv_geom conv;   /* im2col / col2im (conv2d) */
  void *dst;           /* raw copies */
  const void *src;
  /* an op's parameter block (gs_pool2d_params, gs_resize_params), copied
   * in by the slot (issue 20, branch pool) */
  int64_t params[16];
  /* a wait task: blocks until stream (wdev, wstream) completed wseq */
  int wdev, wstream;
  uint64_t wseq;
  struct gs_event *event; /* a marker task: stamps the event's time */
  uint64_t wseq_gen;      /* ... if the event's latest record is this one */
  /* the kernel lab (issue 30): a modelled duration given by the caller
   * (seconds; < 0: the time model's formula), and buffers past the four
   * above that the task uses (read at submit only) */
  double fixed_s;
  gs_buffer *const *extra;
  int nextra;
};

/* (Re)creates n queued devices; each default stream's worker runs its
 * kernels on `cores` threads. Waits for queued work of the old devices. */
void gs_queue_configure(int n, int cores);
int gs_queue_devices(void);
/* The threads each device's kernels run on (its share of the host). */
int gs_queue_cores(void);
/* The device's error record, for kernels that find errors in the data. */
gs_devflag *gs_queue_flag(int dev);

/* A task for device dev (NULL with an error recorded when out of host
 * memory); then gs_task_tensor for each tensor the kernel touches, the
 * written one first, and gs_task_submit. */
gs_task *gs_task_new(int dev, const char *name, gs_task_fn run);
void gs_task_tensor(gs_task *t, const gs_tensor *x);
/* Queues t on the device's current stream (or `stream`); a full queue
 * makes the host wait (interruptibly). On failure t is freed. */
gs_status gs_task_submit(gs_task *t);
gs_status gs_task_submit_on(gs_task *t, int stream, uint64_t *seq);

/* Current stream per device (0 until set), and the pool. */
int gs_queue_current(int dev);
void gs_queue_set_current(int dev, int stream);
int gs_queue_pool_stream(int dev);

/* Host waits. `what` names the synchronising call for the sync debug mode
 * and messages ("item", "synchronize", NULL: no sync-debug note). Each
 * reports a deferred device error of the device(s) waited on. */
gs_status gs_buffer_host_wait(gs_buffer *b, const char *what);
/* The same, for a copy to the host that has written nothing yet: Ctrl-C
 * stops it also inside an in-place op (x:copy_(y) into a CPU tensor) as
 * long as that op has queued no write into the caller's buffers. */
gs_status gs_buffer_host_wait_before_write(gs_buffer *b, const char *what);
gs_status gs_queue_sync_stream(int dev, int stream, const char *what);
/* waits until the stream completed seq (a task it queued); report: take
 * the device's deferred errors too (a copy from the host does not) */
gs_status gs_queue_wait_seq(int dev, int stream, uint64_t seq, const char *what, bool report);
gs_status gs_queue_sync_device(int dev, const char *what);
bool gs_queue_stream_idle(int dev, int stream);
/* Waits (uninterruptibly) until the device has no work queued or running:
 * before its memory is given back to the host. */
void gs_queue_drain_device(int dev);

/* Buffer lifetime. A new buffer on a queued device belongs to the current
 * stream: host access waits for what that stream queued before (the
 * block may have been used by it). gs_queue_release decides whether a
 * freed block may go back to its stream's cache now (every use on another
 * stream has finished) or must wait (then it is kept on a pending list
 * and freed later through free_fn). */
void gs_queue_adopt(gs_buffer *b);
typedef void (*gs_queue_free_fn)(int dev, void *ptr, int stream);
bool gs_queue_can_free(const gs_buffer *b);
void gs_queue_defer_free(gs_buffer *b, gs_queue_free_fn fn);
void gs_queue_collect(int dev); /* frees pending blocks whose uses finished */

/* Events (torch.cuda.Event). */
typedef struct gs_event gs_event;
gs_event *gs_event_new(bool timing);
void gs_event_release(gs_event *e);
gs_status gs_event_record(gs_event *e, int dev, int stream);
/* done: whether its work completed; an error for an event recorded on
 * devices that have been reconfigured since (as synchronize, elapsed and
 * wait_event) */
gs_status gs_event_query(gs_event *e, bool *done);
gs_status gs_event_synchronize(gs_event *e);
/* ms from a to b; both recorded with timing and completed */
gs_status gs_event_elapsed(gs_event *a, gs_event *b, double *ms);
/* stream (dev, stream) waits for what e recorded before its later work */
gs_status gs_queue_wait_event(int dev, int stream, gs_event *e);
bool gs_event_recorded(const gs_event *e, int *dev);

/* Kernel time and count per device (utilisation, memory_stats). */
void gs_queue_busy(int dev, uint64_t *busy_ns, uint64_t *kernels);

#endif
