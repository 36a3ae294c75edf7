/* gs_model_clock.c: the host's clock beside modelled devices (see
 * gs_model_clock.h; formulas in docs/time-model.md). The devices' own
 * modelled times are their backend's (backend/sim/sim_clock.c). */
#include <pthread.h>
#include "core/gs_model_clock.h"
#include "core/gs_prof.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double excluded, added; /* the host clock's corrections, seconds */
static double last_now;        /* the latest reading: the clock never goes back */

double gs_mclock_real_now(void) { return (double)gs_prof_now_ns() * 1e-9; }

/* Never less than an earlier reading: another thread (torch.distributed's
 * communication thread) may read the clock while the host waits, before
 * that wait's real time is taken out. */
static double host_now_locked(void) {
  double h = gs_mclock_real_now() - excluded + added;
  if (h < last_now) return last_now;
  last_now = h;
  return h;
}

double gs_mclock_host_now(void) {
  pthread_mutex_lock(&lock);
  double h = host_now_locked();
  pthread_mutex_unlock(&lock);
  return h;
}

double gs_mclock_host_add(double s) {
  pthread_mutex_lock(&lock);
  added += s;
  double h = host_now_locked();
  pthread_mutex_unlock(&lock);
  return h;
}

double gs_mclock_host_exclude(double real_s) {
  pthread_mutex_lock(&lock);
  excluded += real_s;
  double h = host_now_locked();
  pthread_mutex_unlock(&lock);
  return h;
}

void gs_mclock_host_waited(double real_s, double until, double extra_s) {
  pthread_mutex_lock(&lock);
  excluded += real_s; /* the device's work, computed here */
  double h = host_now_locked();
  if (until > h) added += until - h;
  added += extra_s;
  pthread_mutex_unlock(&lock);
}
