/* gs_prof.c: the event buffer behind gs_prof.h: a growable array under a
 * mutex. Events come from the host thread and the device workers; a
 * profile of a chapter example holds thousands, not millions, so one lock
 * is cheap enough and keeps the order in which events ended. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "gs_prof.h"

int gs_prof_active;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gs_prof_event *events;
static int64_t count, cap;

uint64_t gs_prof_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void gs_prof_record(const gs_prof_event *e) {
  if (!gs_prof_on()) return;
  pthread_mutex_lock(&lock);
  if (count == cap) {
    int64_t ncap = cap ? cap * 2 : 1024;
    gs_prof_event *n = realloc(events, (size_t)ncap * sizeof *n);
    if (!n) { pthread_mutex_unlock(&lock); return; } /* drop the event, never fail the op */
    events = n;
    cap = ncap;
  }
  events[count++] = *e;
  pthread_mutex_unlock(&lock);
}

void gs_prof_start(void) {
  pthread_mutex_lock(&lock);
  count = 0;
  pthread_mutex_unlock(&lock);
  __atomic_store_n(&gs_prof_active, 1, __ATOMIC_RELEASE);
}

void gs_prof_stop(void) { __atomic_store_n(&gs_prof_active, 0, __ATOMIC_RELEASE); }

const gs_prof_event *gs_prof_events(int64_t *n) {
  pthread_mutex_lock(&lock);
  *n = count;
  pthread_mutex_unlock(&lock);
  return events;
}
