/* gs_devflag.h: errors that a device kernel finds in the data (an integer
 * division by zero, an index out of range) without stopping the host to
 * ask. The kernel records the first such error in its device's record
 * and finishes (its output is then undefined); the record is read at the
 * next point where the host waits for the device anyway -- a copy to the
 * host (print, item, tolist, :cpu()) or torch.cuda.synchronize() -- and
 * reported there, naming the op, then cleared: the device stays usable.
 * Real GPUs keep the record in device memory; simulated GPUs, whose
 * kernels run on the host, keep it in host memory and follow the same
 * rule, so programs see the same behaviour on both. The CPU reports such
 * errors at once, with the same words (gs_devflag_describe).
 *
 * Plain C, read by nvcc too (backend/cuda/kernels/common.cuh raises records on the
 * device). */
#ifndef GS_DEVFLAG_H
#define GS_DEVFLAG_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  GS_FLAG_NONE = 0,
  GS_FLAG_FLOOR_DIVIDE_BY_ZERO,  /* integer // by 0 */
  GS_FLAG_REMAINDER_BY_ZERO,     /* integer % by 0 */
  GS_FLAG_INDEX_SELECT,          /* index out of range: value, dim, limit */
  GS_FLAG_NLL_TARGET,            /* class index out of range: value, limit */
  GS_FLAG_COUNT
} gs_devflag_code;

/* The record: code 0 while nothing went wrong. The first kernel to set
 * the code writes the rest. */
typedef struct {
  int32_t code;
  int32_t dim;     /* 0-based dimension, where the op has one */
  int64_t value;   /* the bad value (0-based index or class) */
  int64_t limit;   /* the valid range was [0, limit) */
  /* integer // and % by zero: set to 1 by any thread that meets one (the
   * shared division rules of gs_elemmath.h take an int *); read as
   * GS_FLAG_FLOOR_DIVIDE_BY_ZERO / GS_FLAG_REMAINDER_BY_ZERO */
  int32_t zero_div[2];
  /* host-side records only: every gs_devflag_raise counts here, also when
   * an earlier error holds the record, so the queue's worker can tell that
   * the task it just ran found an error (and mark what it wrote) */
  uint32_t raised;
} gs_devflag;

#ifndef __CUDACC__
#include "core/gs_common.h"

/* Records an error from host code (simulated kernels); the first wins.
 * Thread-safe. */
void gs_devflag_raise(gs_devflag *f, int code, int dim, int64_t value, int64_t limit);
/* What went wrong, in the words the CPU uses for the same error
 * ("ZeroDivisionError: integer division or modulo by zero", "index 5 is
 * out of bounds for dimension 1 with size 3 (valid: 1 to 3)"): indices
 * 1-based, as Lua passes them. */
void gs_devflag_describe(const gs_devflag *f, char *buf, size_t len);
/* The op that raised code ("floor_divide", "index_select", ...). */
const char *gs_devflag_op(int code);
/* Reads and clears the record of `device` (a name such as "cuda:0"):
 * GS_OK when it is clear, else an error naming the op and saying it was
 * found by a kernel queued earlier. Call only after the device's queued
 * work has finished. */
gs_status gs_devflag_take(gs_devflag *f, const char *device);
/* The message gs_devflag_take gives for a record f (code set), without
 * taking it. */
void gs_devflag_message(const gs_devflag *f, const char *device, char *buf, size_t len);
/* Whether f holds an error (read without taking it). */
int gs_devflag_set(const gs_devflag *f);
#endif

#endif
