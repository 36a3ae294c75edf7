/* gs_streams.c: streams and events of any device (gs_streams.h): the
 * device's backend's table when it has one for the device, else the shared
 * behaviour of a backend that does not queue work (one stream, events
 * stamped on the host after a device synchronisation); and the sync debug
 * mode, which every backend's host waits consult. */
#include <stdlib.h>
#include "core/gs_backend.h"
#include "core/gs_device.h"
#include "core/gs_prof.h"
#include "core/gs_streams.h"

static int sync_mode;
_Thread_local const char *gs_sync_warning;

/* The backend's streams for CUDA device dev, or NULL for the shared ones. */
static const gs_streams *streams_of(int dev) {
  const gs_backend *be = gs_device_backend((gs_device){GS_CUDA, dev});
  const gs_streams *s = be ? be->streams : NULL;
  return s && s->count(dev) > 0 ? s : NULL;
}

static gs_status device_sync(int dev) {
  const gs_backend *be = gs_device_backend((gs_device){GS_CUDA, dev});
  return be && be->synchronize ? be->synchronize(dev) : GS_OK;
}

bool gs_stream_queued(int dev) { return streams_of(dev) != NULL; }
int gs_stream_count(int dev) {
  const gs_streams *s = streams_of(dev);
  return s ? s->count(dev) : 1;
}
int gs_stream_current(int dev) {
  const gs_streams *s = streams_of(dev);
  return s ? s->current(dev) : 0;
}
void gs_stream_set_current(int dev, int stream) {
  const gs_streams *s = streams_of(dev);
  if (s) s->set_current(dev, stream);
}
int gs_stream_pool(int dev) {
  const gs_streams *s = streams_of(dev);
  return s ? s->pool_stream(dev) : -1;
}
gs_status gs_stream_synchronize(int dev, int stream, const char *what) {
  const gs_streams *s = streams_of(dev);
  return s ? s->synchronize(dev, stream, what) : device_sync(dev);
}
bool gs_stream_idle(int dev, int stream) {
  const gs_streams *s = streams_of(dev);
  return s ? s->idle(dev, stream) : device_sync(dev) == GS_OK;
}

/* ---- events ----
 * The backend's event is made at the first record on a device with
 * streams of its own; a record on any other device stamps the host clock
 * after synchronising the device (its work is then done). */
struct gs_stream_event {
  bool timing;
  const gs_streams *impl; /* whose event `be` is */
  void *be;
  uint64_t host_ns;
  bool host_recorded;
  int host_dev;
};

gs_stream_event *gs_stream_event_new(bool timing) {
  gs_stream_event *e = calloc(1, sizeof *e);
  if (!e) { gs_error_code(GS_ERR_OOM, "out of host memory creating an event"); return NULL; }
  e->timing = timing;
  return e;
}

void gs_stream_event_release(gs_stream_event *e) {
  if (!e) return;
  if (e->be) e->impl->event_release(e->be);
  free(e);
}

gs_status gs_stream_event_record(gs_stream_event *e, int dev, int stream) {
  const gs_streams *s = streams_of(dev);
  if (!s) {
    GS_TRY(device_sync(dev));
    e->host_ns = gs_prof_now_ns();
    e->host_recorded = true;
    e->host_dev = dev;
    return GS_OK;
  }
  if (e->be && e->impl != s) { e->impl->event_release(e->be); e->be = NULL; }
  if (!e->be) {
    e->be = s->event_new(e->timing);
    if (!e->be) return GS_ERR_OOM;
    e->impl = s;
  }
  return s->event_record(e->be, dev, stream);
}

gs_status gs_stream_event_query(gs_stream_event *e, bool *done) {
  *done = true;
  if (e->host_recorded || !e->be) return GS_OK;
  return e->impl->event_query(e->be, done);
}

gs_status gs_stream_event_synchronize(gs_stream_event *e) {
  if (e->host_recorded || !e->be) return GS_OK;
  return e->impl->event_synchronize(e->be);
}

gs_status gs_stream_event_elapsed(gs_stream_event *a, gs_stream_event *b, double *ms) {
  if (a->host_recorded && b->host_recorded) {
    *ms = ((double)b->host_ns - (double)a->host_ns) / 1e6;
    return GS_OK;
  }
  if (a->be && b->be && a->impl == b->impl) return a->impl->event_elapsed(a->be, b->be, ms);
  /* one of them was never recorded on a queued device: the checks a
   * backend makes first, in its order */
  if (!a->timing || !b->timing)
    return gs_error("elapsed_time: both events must be created with {enable_timing = true}");
  return gs_error("elapsed_time: both events must be recorded before calculating elapsed time");
}

gs_status gs_stream_event_wait(gs_stream_event *e, int dev, int stream) {
  const gs_streams *s = streams_of(dev);
  if (!s || e->host_recorded || !e->be || e->impl != s) return GS_OK; /* nothing queued to wait for */
  return s->event_wait(dev, stream, e->be);
}

bool gs_stream_event_device(const gs_stream_event *e, int *dev) {
  if (e->host_recorded) { *dev = e->host_dev; return true; }
  return e->be && e->impl->event_recorded(e->be, dev);
}

/* ---- sync debug mode ---- */

void gs_set_sync_debug_mode(int mode) { sync_mode = mode; }
int gs_get_sync_debug_mode(void) { return sync_mode; }

gs_status gs_sync_note(const char *what) {
  if (!what || sync_mode == 0) return GS_OK;
  if (sync_mode == 2) {
    gs_sync_warning = what; /* the binding names the user's call and line */
    return gs_error("%s waits for a CUDA device (a synchronizing operation) and torch.cuda.set_sync_debug_mode is "
                    "'error'", what);
  }
  gs_sync_warning = what;
  return GS_OK;
}
