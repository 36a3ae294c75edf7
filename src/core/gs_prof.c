/* gs_prof.c: the event buffer behind gs_prof.h: a growable array under a
 * mutex. Events come from the host thread and the device workers; a
 * profile of a chapter example holds thousands, not millions, so one lock
 * is cheap enough and keeps the order in which events ended. With
 * record_shapes, a second array of the same length holds each event's
 * shapes text. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/gs_model_clock.h"
#include "core/gs_prof.h"

int gs_prof_active;
static int record_shapes;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gs_prof_event *events;
static char (*shapes)[GS_PROF_SHAPES_LEN]; /* beside events while shapes are recorded */
static int64_t count, cap, shapes_cap;
/* Events past GS_PROF_MAX_EVENTS are counted, not kept: a profile of a
 * long loop (millions of small ops) would otherwise grow without bound,
 * here and more in the Lua tables made from it. */
static int64_t dropped;

uint64_t gs_prof_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t gs_prof_clock_ns(void) { return (uint64_t)(gs_mclock_host_now() * 1e9 + 0.5); }

/* Appends under the lock; the event is dropped (never the op failed) when
 * memory runs out. */
static void append(const gs_prof_event *e, const char *text) {
  if (!gs_prof_on()) return;
  pthread_mutex_lock(&lock);
  /* again under the lock: once gs_prof_stop returned, nothing appends, so
   * the events can be read without it until the next start */
  if (!__atomic_load_n(&gs_prof_active, __ATOMIC_RELAXED)) { pthread_mutex_unlock(&lock); return; }
  if (count >= GS_PROF_MAX_EVENTS) {
    dropped++;
    pthread_mutex_unlock(&lock);
    return;
  }
  if (count == cap) {
    int64_t ncap = cap ? cap * 2 : 1024;
    gs_prof_event *n = realloc(events, (size_t)ncap * sizeof *n);
    if (!n) { pthread_mutex_unlock(&lock); return; }
    events = n;
    cap = ncap;
  }
  if (text && shapes_cap < cap) {
    char (*n)[GS_PROF_SHAPES_LEN] = realloc(shapes, (size_t)cap * sizeof *n);
    if (!n) { pthread_mutex_unlock(&lock); return; }
    memset(n + shapes_cap, 0, (size_t)(cap - shapes_cap) * sizeof *n);
    shapes = n;
    shapes_cap = cap;
  }
  if (count < shapes_cap) {
    if (text) snprintf(shapes[count], GS_PROF_SHAPES_LEN, "%s", text);
    else shapes[count][0] = '\0';
  }
  events[count++] = *e;
  pthread_mutex_unlock(&lock);
}

void gs_prof_record(const gs_prof_event *e) { append(e, NULL); }
void gs_prof_record_shaped(const gs_prof_event *e, const char *text) { append(e, text ? text : ""); }

const char *gs_prof_event_shapes(int64_t i) {
  return i >= 0 && i < shapes_cap && i < count ? shapes[i] : "";
}

int64_t gs_prof_dropped(void) {
  pthread_mutex_lock(&lock);
  int64_t n = dropped;
  pthread_mutex_unlock(&lock);
  return n;
}

void gs_prof_start(void) {
  pthread_mutex_lock(&lock);
  count = 0;
  dropped = 0;
  pthread_mutex_unlock(&lock);
  __atomic_store_n(&gs_prof_active, 1, __ATOMIC_RELEASE);
}

void gs_prof_stop(void) {
  pthread_mutex_lock(&lock);
  __atomic_store_n(&gs_prof_active, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  __atomic_store_n(&record_shapes, 0, __ATOMIC_RELAXED);
}

void gs_prof_set_record_shapes(bool on) { __atomic_store_n(&record_shapes, on ? 1 : 0, __ATOMIC_RELAXED); }
bool gs_prof_shapes_on(void) { return __atomic_load_n(&record_shapes, __ATOMIC_RELAXED) != 0; }

void gs_prof_add_shape(char *buf, int ndim, const int64_t *shape) {
  size_t room = GS_PROF_SHAPES_LEN, n = strnlen(buf, room);
  char part[GS_PROF_SHAPES_LEN];
  size_t k = 0;
  k += (size_t)snprintf(part + k, sizeof part - k, "%s[", n ? ", " : "");
  for (int d = 0; d < ndim && k < sizeof part; d++)
    k += (size_t)snprintf(part + k, sizeof part - k, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (k < sizeof part) k += (size_t)snprintf(part + k, sizeof part - k, "]");
  /* a list that does not fit ends in "..." rather than a cut number */
  if (strstr(buf, "...")) return;
  if (n + k >= room) {
    const char *more = n ? ", ..." : "...";
    if (n + strlen(more) < room) memcpy(buf + n, more, strlen(more) + 1);
    return;
  }
  memcpy(buf + n, part, k + 1);
}

const gs_prof_event *gs_prof_events(int64_t *n) {
  pthread_mutex_lock(&lock);
  *n = count;
  pthread_mutex_unlock(&lock);
  return events;
}
