/* gs_prof.h: the profiler's recording seam. Anything that does timed work
 * (a simulated device's stream worker running a kernel or a copy, the host
 * thread running a CPU op or waiting for a device) reports one event here
 * while a profile is active. Recording is thread-safe and cheap when no
 * profile is active (one relaxed atomic load). torch.profiler (the Lua side)
 * turns the events into a table, a Chrome trace and an SVG timeline. */
#ifndef GS_PROF_H
#define GS_PROF_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
  GS_PROF_KERNEL, /* a kernel on a device stream (or a CPU op on the host) */
  GS_PROF_COPY,   /* bytes moved between memories */
  GS_PROF_SYNC,   /* the host waiting for a device */
  GS_PROF_KIND_COUNT
} gs_prof_kind;

typedef struct {
  const char *name;     /* a static string: "add", "mm", "copy_h2d", ... */
  gs_prof_kind kind;
  int device_type;      /* GS_CPU or GS_CUDA (gs_device.h) */
  int device_index;     /* -1 for the cpu */
  int stream;           /* the stream's id on its device (0: default), -1 on the host */
  uint64_t t0_ns, t1_ns; /* CLOCK_MONOTONIC */
  uint64_t bytes;       /* bytes read and written */
  uint64_t flops;       /* floating-point operations, 0 when not counted */
  /* issue 29: on a device that models a GPU, t0/t1 are its modelled start
   * and end on the host's modelled clock (gs_prof_clock_ns), and the
   * model says what bound the task and which unit computed it */
  uint8_t modelled;     /* 1: t0/t1 are modelled times */
  uint8_t bound;        /* gs_prof_bound */
  uint8_t unit;         /* gs_gpu_unit + 1; 0: none */
} gs_prof_event;

/* What bound a modelled task (docs/profiling.md, "Profiles on a modelled GPU"). */
typedef enum {
  GS_BOUND_NONE,    /* not modelled */
  GS_BOUND_COMPUTE, /* its FLOPs at the unit's peak (times the fill) took longest */
  GS_BOUND_MEMORY,  /* its bytes at the memory's bandwidth took longest */
  GS_BOUND_LAUNCH,  /* the kernel launch took longer than its work */
  GS_BOUND_COPY,    /* a copy engine: bytes over PCIe or NVLink */
  GS_BOUND_HOST,    /* the host: a CPU op or a wait, on the host's clock */
  GS_BOUND_COUNT
} gs_prof_bound;

/* Nonzero while a profile records. */
extern int gs_prof_active;
static inline bool gs_prof_on(void) { return __atomic_load_n(&gs_prof_active, __ATOMIC_RELAXED) != 0; }

/* Appends one event (copied) when a profile is active; from any thread. */
void gs_prof_record(const gs_prof_event *e);
/* Starts a profile (clears earlier events) / stops it. */
void gs_prof_start(void);
void gs_prof_stop(void);
/* The recorded events, in the order they were recorded; valid until the
 * next gs_prof_start. Read them after gs_prof_stop: from then on no
 * thread appends. */
const gs_prof_event *gs_prof_events(int64_t *count);
/* A profile keeps its first GS_PROF_MAX_EVENTS events; the ones after are
 * counted (gs_prof_dropped, since the last gs_prof_start) and dropped. */
#define GS_PROF_MAX_EVENTS 100000
int64_t gs_prof_dropped(void);
uint64_t gs_prof_now_ns(void);
/* The clock a profile's events are on: the host's clock (torch.clock(),
 * core/gs_model_clock.h) in ns, which is real time when no device models
 * a GPU; device events on modelled devices carry modelled times on it. */
uint64_t gs_prof_clock_ns(void);

/* record_shapes: while on (set before gs_prof_start, cleared by
 * gs_prof_stop), recorders that know their operands' shapes pass them as
 * text ("[64, 32], [32, 16]") with gs_prof_record_shaped; the text is kept
 * beside the event, so gs_prof_event stays the same for every recorder. */
#define GS_PROF_SHAPES_LEN 80
void gs_prof_set_record_shapes(bool on);
bool gs_prof_shapes_on(void);
void gs_prof_record_shaped(const gs_prof_event *e, const char *shapes);
/* Event i's shapes ("" when none were recorded); valid as gs_prof_events. */
const char *gs_prof_event_shapes(int64_t i);
/* Appends an operand's shape to buf (GS_PROF_SHAPES_LEN bytes): "[2, 3]",
 * comma-separated after the first, ending in "..." when out of room. */
void gs_prof_add_shape(char *buf, int ndim, const int64_t *shape);

#endif
