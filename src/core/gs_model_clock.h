/* gs_model_clock.h: the host's clock beside devices that model a GPU
 * (gs_gpu_model.h; issue 29, docs/time-model.md, "The modelled clock").
 *
 * The host's clock is this machine's real time, minus the real time the
 * host spent waiting for modelled devices (their work was computed here,
 * far slower than the modelled GPU would do it), plus what the model adds:
 * the driver's cost per launch and per synchronisation, and, when the host
 * waits for a device, a jump to that work's modelled end. The time the
 * host thread was ready but waited for a core (the simulated GPUs compute
 * on the same cores) is taken out too. With no modelled device ("host"),
 * nothing is subtracted or added: the clock is real time.
 *
 * A backend whose devices model a GPU keeps their modelled times itself
 * (the simulated GPUs: backend/sim/sim_clock.h) and corrects the host's
 * clock through the two calls below. One lock; any thread may read. */
#ifndef GS_MODEL_CLOCK_H
#define GS_MODEL_CLOCK_H

#include <stdint.h>

/* The host's clock, seconds (torch.clock()); real time with no model. */
double gs_mclock_host_now(void);
/* The real clock, seconds (what computing it here took). */
double gs_mclock_real_now(void);
/* The host paid s seconds more than its real work (a launch's driver
 * cost); returns the clock after it. */
double gs_mclock_host_add(double s);
/* The host starts waiting for, or doing, a modelled device's work (a
 * synchronisation, a copy it does itself): returns a token for one of the
 * two calls below, which take that wait's wall time out of the clock. */
uint64_t gs_mclock_wait_begin(void);
/* The host did a modelled device's work itself (a copy) since `token`:
 * its wall time is taken out; returns the clock after it. */
double gs_mclock_host_exclude(uint64_t token);
/* The host waited since `token` (0: it did not wait) for a modelled
 * device's work, which ends at `until` on this clock, then paid extra_s
 * (a synchronisation's driver cost): the wait's wall time is taken out,
 * the clock jumps to `until` if it is behind, then extra_s is added. */
void gs_mclock_host_waited(uint64_t token, double until, double extra_s);
/* How many launches and waits on modelled devices the host has made:
 * unchanged across some work means the model had no part in its time. */
uint64_t gs_mclock_events(void);
/* The GPU models changed (gs_gpu_model_set) or the devices were
 * reconfigured: the run delay is followed again only once a modelled
 * device is used, so on "host" the clock is real time. */
void gs_mclock_models_changed(void);

#endif
