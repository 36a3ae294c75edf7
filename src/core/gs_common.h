/* gs_common.h: what every engine file needs: status codes, the error slot,
 * limits. The engine never calls luaL_error or exit(): it returns GS_ERR and
 * leaves a message in a thread-local slot that the binding layer raises. */
#ifndef GS_COMMON_H
#define GS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_MAX_DIMS 16
#define GS_VERSION "0.1.0"

typedef enum { GS_OK = 0, GS_ERR = 1, GS_ERR_OOM = 2 } gs_status;

/* Records a printf-style message and returns GS_ERR (or `code`). */
gs_status gs_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
gs_status gs_error_code(gs_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *gs_last_error(void);

/* Ctrl-C. The shell's SIGINT handler sets gs_interrupted; long engine loops
 * (the CPU pool's jobs, serial elementwise loops, the matmul batch loop)
 * poll it between blocks of work -- never per element, and not at all in
 * ops too small to reach the pool -- and stop with gs_interrupted_error().
 * An op that writes into a tensor the caller holds (the gs_ag_*_ in-place
 * ops) raises gs_interrupt_hold for its duration: it runs to the end, so a
 * failed call still leaves the caller's tensors unchanged, and the shell's
 * hook raises right after it.
 * The flag is atomic: pool workers read it while the main thread (or the
 * torch._interrupt_in test thread) sets and clears it. */
#ifndef __cplusplus /* the CUDA kernels (C++) read this header but never poll */
extern _Atomic int gs_interrupted;
extern _Thread_local int gs_interrupt_hold;
/* Tasks this thread queued on a device since its outermost hold began
 * that write a buffer made before it (the caller's tensor; a temporary
 * the op made inside the hold does not count, issue 23): a held op that
 * has queued no such write may still stop while it waits for room in a
 * full queue (nothing the caller holds was touched); one that has queued
 * part of its write waits and queues the rest (backend/sim/sim_queue.c). */
extern _Thread_local int gs_hold_queued;
/* Buffers on devices that queue work get increasing ids (gs_buffer.qid)
 * from this counter, which the core owns so that a hold reads it without
 * calling into a backend. */
extern _Atomic uint64_t gs_buffer_qids;
/* The newest such buffer's id when the outermost hold began. */
extern _Thread_local uint64_t gs_hold_qid;
static inline void gs_hold_begin(void) {
  if (gs_interrupt_hold++ == 0) {
    gs_hold_queued = 0;
    gs_hold_qid = gs_buffer_qids;
  }
}
static inline void gs_hold_end(void) { gs_interrupt_hold--; }
/* Whether a loop started on this thread now may stop early. */
static inline bool gs_interruptible(void) { return gs_interrupt_hold == 0; }
#endif
/* Consumes the flag (the shell raises no second error) and records
 * "interrupted!", the shell's message for Ctrl-C. */
gs_status gs_interrupted_error(void);

#define GS_TRY(expr) do { gs_status _s = (expr); if (_s != GS_OK) return _s; } while (0)

#endif
