/* gs_model_clock.c: the host's clock beside modelled devices (see
 * gs_model_clock.h; formulas in docs/time-model.md). The devices' own
 * modelled times are their backend's (backend/sim/sim_clock.c). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "core/gs_model_clock.h"
#include "core/gs_prof.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double excluded, added; /* the host clock's corrections, seconds */
static double last_now;        /* the latest reading: the clock never goes back */
static uint64_t events;        /* launches and waits on modelled devices, ever */

/* The host thread's run delay: the time it was ready to run but waited
 * for a core (the kernel's schedstat). The simulated GPUs compute on this
 * machine's cores, so while they work the host thread is preempted, and
 * wall time would count that as the host's own work: it is taken out
 * ("starved"), except inside the host's waits, whose whole wall time is
 * taken out already. Read at most every SAMPLE_NS (a read costs about a
 * microsecond; ops are queued far more often), and only when the host
 * queues or waits for a modelled device, so with "host" the clock stays
 * real time. delay_fd -1: no schedstat here. */
#define SAMPLE_NS 50000
static int delay_fd = -1;
static bool delay_tried, in_wait;
static bool active; /* a modelled device was used since the models last changed */
static uint64_t delay_base, last_sample;
static double starved;

static bool read_delay(uint64_t *out) {
  char buf[96];
  if (delay_fd < 0) return false;
  ssize_t n = pread(delay_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = 0;
  /* "run wait slices": the second number. strtoull, not sscanf: a read is
   * on the path of every 25th or so queued op, and sscanf was most of its
   * user time */
  char *end;
  (void)strtoull(buf, &end, 10);
  if (end == buf || *end != ' ') return false;
  char *p = end;
  uint64_t wait = strtoull(p, &end, 10);
  if (end == p) return false;
  *out = wait;
  return true;
}

/* Called on the host thread (it queues and waits) the first time a
 * modelled device is used: from then on its run delay is followed. */
static void follow_host_thread_locked(void) {
  if (!active) { /* from now on: the delay so far is not the model's business */
    uint64_t now = gs_prof_now_ns();
    active = true;
    if (delay_tried && read_delay(&delay_base)) last_sample = now;
  }
  if (delay_tried) return;
  delay_tried = true;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)gettid());
  delay_fd = open(path, O_RDONLY | O_CLOEXEC);
  if (delay_fd >= 0 && !read_delay(&delay_base)) {
    close(delay_fd);
    delay_fd = -1;
  }
}

/* Adds the run delay since the last sample to `starved` (outside waits);
 * `every` forces a read however recent the last one. */
static void sample_delay_locked(uint64_t now_ns, bool every) {
  uint64_t d;
  if (in_wait || (!every && now_ns - last_sample < SAMPLE_NS) || !read_delay(&d)) return;
  last_sample = now_ns;
  if (d > delay_base) starved += (double)(d - delay_base) * 1e-9;
  delay_base = d;
}

double gs_mclock_real_now(void) { return (double)gs_prof_now_ns() * 1e-9; }

/* Never less than an earlier reading: another thread (torch.distributed's
 * communication thread) may read the clock while the host waits, before
 * that wait's real time is taken out. */
enum { NO_SAMPLE, SAMPLE_SOMETIMES, SAMPLE_NOW };
static double host_now_locked(int sample) {
  uint64_t ns = gs_prof_now_ns();
  if (active && sample != NO_SAMPLE) sample_delay_locked(ns, sample == SAMPLE_NOW);
  double h = (double)ns * 1e-9 - excluded - starved + added;
  if (h < last_now) return last_now;
  last_now = h;
  return h;
}

/* A reading samples the run delay first, so no later sample takes out
 * time a reading already showed (the clock would stand still). */
double gs_mclock_host_now(void) {
  pthread_mutex_lock(&lock);
  double h = host_now_locked(SAMPLE_NOW);
  pthread_mutex_unlock(&lock);
  return h;
}

double gs_mclock_host_add(double s) {
  pthread_mutex_lock(&lock);
  follow_host_thread_locked();
  events++;
  added += s;
  double h = host_now_locked(SAMPLE_SOMETIMES);
  pthread_mutex_unlock(&lock);
  return h;
}

uint64_t gs_mclock_wait_begin(void) {
  pthread_mutex_lock(&lock);
  follow_host_thread_locked();
  events++;
  uint64_t now = gs_prof_now_ns();
  sample_delay_locked(now, true);
  in_wait = true;
  pthread_mutex_unlock(&lock);
  return now;
}

/* Ends a wait begun at `token`: its wall time is taken out, and the run
 * delay inside it is skipped (not counted twice). */
static void end_wait_locked(uint64_t token) {
  uint64_t now = gs_prof_now_ns(), d;
  excluded += (double)(now - token) * 1e-9;
  in_wait = false;
  if (read_delay(&d)) delay_base = d;
  last_sample = now;
}

double gs_mclock_host_exclude(uint64_t token) {
  pthread_mutex_lock(&lock);
  end_wait_locked(token);
  double h = host_now_locked(SAMPLE_NOW);
  pthread_mutex_unlock(&lock);
  return h;
}

void gs_mclock_host_waited(uint64_t token, double until, double extra_s) {
  pthread_mutex_lock(&lock);
  if (token) end_wait_locked(token);
  double h = host_now_locked(SAMPLE_NOW);
  if (until > h) added += until - h;
  added += extra_s;
  pthread_mutex_unlock(&lock);
}

void gs_mclock_models_changed(void) {
  pthread_mutex_lock(&lock);
  active = false;
  pthread_mutex_unlock(&lock);
}

uint64_t gs_mclock_events(void) {
  pthread_mutex_lock(&lock);
  uint64_t n = events;
  pthread_mutex_unlock(&lock);
  return n;
}
