/* gs_devflag.c: host side of the deferred device errors (gs_devflag.h). */
#include <stdbool.h>
#include <stdio.h>
#include "core/gs_devflag.h"

void gs_devflag_raise(gs_devflag *f, int code, int dim, int64_t value, int64_t limit) {
  int32_t none = GS_FLAG_NONE;
  if (__atomic_load_n(&f->code, __ATOMIC_RELAXED) != GS_FLAG_NONE) return;
  /* the details are written before the code is published */
  if (!__atomic_compare_exchange_n(&f->code, &none, -1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
  f->dim = dim;
  f->value = value;
  f->limit = limit;
  __atomic_store_n(&f->code, code, __ATOMIC_RELEASE);
}

const char *gs_devflag_op(int code) {
  switch (code) {
  case GS_FLAG_FLOOR_DIVIDE_BY_ZERO: return "floor_divide";
  case GS_FLAG_REMAINDER_BY_ZERO: return "remainder";
  case GS_FLAG_INDEX_SELECT: return "index_select";
  case GS_FLAG_NLL_TARGET: return "nll_loss";
  default: return "a kernel";
  }
}

void gs_devflag_describe(const gs_devflag *f, char *buf, size_t len) {
  long long v = (long long)f->value + 1, lim = (long long)f->limit;
  switch (f->code) {
  case GS_FLAG_FLOOR_DIVIDE_BY_ZERO:
  case GS_FLAG_REMAINDER_BY_ZERO:
    snprintf(buf, len, "ZeroDivisionError: integer division or modulo by zero");
    break;
  case GS_FLAG_INDEX_SELECT:
    snprintf(buf, len, "index %lld is out of bounds for dimension %d with size %lld (valid: 1 to %lld)", v,
             (int)f->dim + 1, lim, lim);
    break;
  case GS_FLAG_NLL_TARGET:
    snprintf(buf, len, "Target %lld is out of bounds: class indices must be in 1..%lld", v, lim);
    break;
  default:
    snprintf(buf, len, "unknown device error %d", (int)f->code);
  }
}

gs_status gs_devflag_take(gs_devflag *f, const char *device) {
  int32_t code = __atomic_load_n(&f->code, __ATOMIC_ACQUIRE);
  if (code == GS_FLAG_NONE && f->zero_div[0]) code = GS_FLAG_FLOOR_DIVIDE_BY_ZERO;
  if (code == GS_FLAG_NONE && f->zero_div[1]) code = GS_FLAG_REMAINDER_BY_ZERO;
  if (code == GS_FLAG_NONE) return GS_OK;
  gs_devflag seen = *f;
  seen.code = code;
  f->dim = 0;
  f->value = f->limit = 0;
  f->zero_div[0] = f->zero_div[1] = 0;
  __atomic_store_n(&f->code, GS_FLAG_NONE, __ATOMIC_RELEASE);
  char what[256];
  gs_devflag_describe(&seen, what, sizeof what);
  /* "cuda:0 found", not "cuda:0:": tools take "name:digits: " for a source position */
  return gs_error("%s on %s found an error in its data: %s (the op was queued earlier: GPU kernels report such "
                  "errors at the next synchronisation, and that op's result is undefined)",
                  gs_devflag_op(code), device, what);
}
