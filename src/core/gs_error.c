/* gs_error.c: the thread-local error slot behind gs_error(). */
#include <stdarg.h>
#include <stdio.h>
#include "core/gs_common.h"

static _Thread_local char last_error[1024];
_Atomic int gs_interrupted = 0;
_Thread_local int gs_interrupt_hold = 0;
_Thread_local int gs_hold_queued = 0;
_Thread_local uint64_t gs_hold_qid = 0;
_Atomic uint64_t gs_buffer_qids = 0;

gs_status gs_interrupted_error(void) {
  gs_interrupted = 0;
  return gs_error("interrupted!");
}

static gs_status record(gs_status code, const char *fmt, va_list ap) {
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  return code;
}

gs_status gs_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gs_status s = record(GS_ERR, fmt, ap);
  va_end(ap);
  return s;
}

gs_status gs_error_code(gs_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gs_status s = record(code, fmt, ap);
  va_end(ap);
  return s;
}

const char *gs_last_error(void) { return last_error; }
