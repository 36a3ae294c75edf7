/* gs_streams.h: streams and events as a backend interface, as collectives
 * are (gs_collectives.h); the models are c10's DeviceGuardImplInterface and
 * ggml's backend event/synchronize slots. A backend whose devices queue
 * work (the simulated GPUs: backend/sim/sim_queue.c) fills a gs_streams
 * table; one that does not leaves gs_backend.streams NULL and its devices
 * get the shared behaviour here: one stream per device, a stream
 * synchronisation is a device synchronisation, and an event is stamped on
 * the host once the device has been synchronised. Nothing above the
 * backends asks which kind a device is: torch._stream (bind/lua_stream.c)
 * calls only the gs_stream_* functions below.
 *
 * Streams are named by (device, id): 0 is the default stream, ids below
 * gs_stream_count(dev) exist. `what` names the synchronising call for the
 * sync debug mode and messages. Devices are CUDA ordinals. */
#ifndef GS_STREAMS_H
#define GS_STREAMS_H

#include "core/gs_common.h"

/* A backend's streams and events. Its events are its own objects, passed
 * as void *; the engine never looks inside. */
typedef struct gs_streams {
  /* streams of device dev (the default one and the pool); 0 when the
   * backend does not queue work for dev (then the shared behaviour) */
  int (*count)(int dev);
  int (*current)(int dev);
  void (*set_current)(int dev, int stream);
  /* a stream of the pool (torch.cuda.Stream()), round-robin */
  int (*pool_stream)(int dev);
  gs_status (*synchronize)(int dev, int stream, const char *what);
  bool (*idle)(int dev, int stream);
  void *(*event_new)(bool timing); /* NULL with an error recorded */
  void (*event_release)(void *e);
  gs_status (*event_record)(void *e, int dev, int stream);
  gs_status (*event_query)(void *e, bool *done);
  gs_status (*event_synchronize)(void *e);
  gs_status (*event_elapsed)(void *a, void *b, double *ms);
  /* stream (dev, stream) waits for what e recorded before its later work */
  gs_status (*event_wait)(int dev, int stream, void *e);
  bool (*event_recorded)(const void *e, int *dev);
} gs_streams;

/* ---- streams of any device ---- */
/* Whether the device's backend queues work on streams of its own. */
bool gs_stream_queued(int dev);
int gs_stream_count(int dev); /* at least 1 */
int gs_stream_current(int dev);
void gs_stream_set_current(int dev, int stream);
/* a pool stream; -1 when the device has no pool */
int gs_stream_pool(int dev);
gs_status gs_stream_synchronize(int dev, int stream, const char *what);
/* whether the stream has finished its work (synchronises a device without
 * streams of its own, as before: true when that succeeded) */
bool gs_stream_idle(int dev, int stream);

/* ---- events (torch.cuda.Event) ---- */
typedef struct gs_stream_event gs_stream_event;
gs_stream_event *gs_stream_event_new(bool timing); /* NULL with an error recorded */
void gs_stream_event_release(gs_stream_event *e);
gs_status gs_stream_event_record(gs_stream_event *e, int dev, int stream);
gs_status gs_stream_event_query(gs_stream_event *e, bool *done);
gs_status gs_stream_event_synchronize(gs_stream_event *e);
gs_status gs_stream_event_elapsed(gs_stream_event *a, gs_stream_event *b, double *ms);
gs_status gs_stream_event_wait(gs_stream_event *e, int dev, int stream);
/* the device it was recorded on; false when never recorded */
bool gs_stream_event_device(const gs_stream_event *e, int *dev);

/* ---- sync debug mode (torch.cuda.set_sync_debug_mode) ----
 * 0 off, 1 warn, 2 error. A synchronising call in mode 1 leaves its name
 * in gs_sync_warning for the binding layer to print with the user's line. */
void gs_set_sync_debug_mode(int mode);
int gs_get_sync_debug_mode(void);
/* The check itself, before any host wait for a device (real ones too):
 * an error in mode 2, a pending warning in mode 1. */
gs_status gs_sync_note(const char *what);
#ifndef __cplusplus /* the CUDA kernels (C++) read this header through gs_backend.h */
extern _Thread_local const char *gs_sync_warning;
#endif

#endif
