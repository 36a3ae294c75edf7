/* gs_devflag.c: host side of the deferred device errors (gs_devflag.h). */
#include <stdbool.h>
#include <stdio.h>
#include "core/gs_devflag.h"

void gs_devflag_raise(gs_devflag *f, int code, int dim, int64_t value, int64_t limit) {
  int32_t none = GS_FLAG_NONE;
  __atomic_fetch_add(&f->raised, 1, __ATOMIC_RELEASE);
  if (__atomic_load_n(&f->code, __ATOMIC_RELAXED) != GS_FLAG_NONE) return;
  /* the details are written before the code is published */
  if (!__atomic_compare_exchange_n(&f->code, &none, -1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
  __atomic_store_n(&f->dim, dim, __ATOMIC_RELAXED);
  __atomic_store_n(&f->value, value, __ATOMIC_RELAXED);
  __atomic_store_n(&f->limit, limit, __ATOMIC_RELAXED);
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
  __atomic_store_n(&f->dim, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&f->value, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&f->limit, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&f->zero_div[0], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&f->zero_div[1], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&f->code, GS_FLAG_NONE, __ATOMIC_RELEASE);
  char msg[512];
  gs_devflag_message(&seen, device, msg, sizeof msg);
  return gs_error("%s", msg);
}

int gs_devflag_set(const gs_devflag *f) {
  return __atomic_load_n(&f->code, __ATOMIC_ACQUIRE) != GS_FLAG_NONE || f->zero_div[0] || f->zero_div[1];
}

void gs_devflag_message(const gs_devflag *f, const char *device, char *buf, size_t len) {
  /* read field by field: a queue's worker calls this while the host may
   * take the record */
  gs_devflag seen = {0};
  seen.code = __atomic_load_n(&f->code, __ATOMIC_ACQUIRE);
  seen.dim = __atomic_load_n(&f->dim, __ATOMIC_RELAXED);
  seen.value = __atomic_load_n(&f->value, __ATOMIC_RELAXED);
  seen.limit = __atomic_load_n(&f->limit, __ATOMIC_RELAXED);
  seen.zero_div[0] = __atomic_load_n(&f->zero_div[0], __ATOMIC_RELAXED);
  seen.zero_div[1] = __atomic_load_n(&f->zero_div[1], __ATOMIC_RELAXED);
  if (seen.code == GS_FLAG_NONE && seen.zero_div[0]) seen.code = GS_FLAG_FLOOR_DIVIDE_BY_ZERO;
  if (seen.code == GS_FLAG_NONE && seen.zero_div[1]) seen.code = GS_FLAG_REMAINDER_BY_ZERO;
  char what[256];
  gs_devflag_describe(&seen, what, sizeof what);
  /* "cuda:0 found", not "cuda:0:": tools take "name:digits: " for a source position */
  snprintf(buf, len,
           "%s on %s found an error in its data: %s (the op was queued earlier: GPU kernels report such "
           "errors at the next synchronisation, and that op's result is undefined)",
           gs_devflag_op(seen.code), device, what);
}
