/* gs_op_index.c: the views picked by user-supplied integers: range entries
 * of index tables (x[{{a, b, step}}], applied by gs_ag_index) and
 * chunk/split. The bindings read every number first (reading can run Lua
 * metamethods, which may change the tensor: x.data = y); everything is
 * checked here against the tensor as it is, in int64 arithmetic that
 * cannot overflow for any Lua integer. */
#include <stdio.h>
#include "ops/gs_ops.h"

gs_status gs_index_range(int nvals, int64_t a, int64_t b, int64_t step, int shown_dim, int64_t size,
                         int64_t *start, int64_t *end, int64_t *step_out) {
  int k = shown_dim + 1;
  if (nvals < 1) a = 1;
  if (nvals < 2) b = nvals == 1 ? a : size;
  if (nvals < 3) step = 1;
  if (step <= 0) return gs_error("slice step must be positive, got %lld (index entry %d)", (long long)step, k);
  /* a + size + 1 cannot overflow for a < 0 */
  int64_t fa = a < 0 ? a + size + 1 : a, fb = b < 0 ? b + size + 1 : b;
  if (fa < 1 || fa > size + 1 || fb > size)
    return gs_error("range {%lld, %lld} is out of bounds for dimension %d with size %lld "
                    "(expected 1 <= a <= %lld + 1 and b <= %lld, negatives counting from the end)",
                    (long long)a, (long long)b, k, (long long)size, (long long)size, (long long)size);
  *start = fa - 1;
  *end = fb; /* below start: empty (gs_slice clamps) */
  *step_out = step;
  return GS_OK;
}

/* ---- chunk / split ---- */

static gs_status check_cut(const gs_tensor *x, int dim, const char *op) {
  if (x->ndim == 0) return gs_error("%s expects at least a 1-dimensional tensor", op);
  if (dim < 0 || dim >= x->ndim)
    return gs_error("%s: dimension %d out of range (the tensor has %d dimensions)", op, dim + 1, x->ndim);
  return GS_OK;
}

/* The number of pieces of `piece` (> 0) elements that cover `size`; an
 * empty dim still gives one (empty) piece. */
static int64_t count_pieces(int64_t size, int64_t piece) {
  return size == 0 ? 1 : size / piece + (size % piece != 0);
}

gs_status gs_chunk_plan(const gs_tensor *x, int dim, int64_t chunks, int64_t *piece, int64_t *count) {
  if (chunks <= 0) return gs_error("chunk expects `chunks` to be greater than 0, got: %lld", (long long)chunks);
  GS_TRY(check_cut(x, dim, "chunk"));
  int64_t size = x->shape[dim];
  /* ceil(size / chunks) without size + chunks - 1, which can overflow */
  *piece = size / chunks + (size % chunks != 0);
  if (*piece == 0) *piece = 1;
  *count = count_pieces(size, *piece);
  return GS_OK;
}

gs_status gs_split_plan(const gs_tensor *x, int dim, int64_t split_size, int64_t *piece, int64_t *count) {
  GS_TRY(check_cut(x, dim, "split"));
  if (split_size <= 0)
    return gs_error("split expects a positive split_size, but got split_size=%lld", (long long)split_size);
  *piece = split_size;
  *count = count_pieces(x->shape[dim], split_size);
  return GS_OK;
}

gs_status gs_split_sizes_check(const gs_tensor *x, int dim, int64_t n, const int64_t *lens) {
  GS_TRY(check_cut(x, dim, "split"));
  int64_t total = 0;
  bool overflow = false;
  for (int64_t i = 0; i < n; i++) {
    if (lens[i] < 0)
      return gs_error("split_with_sizes expects split_sizes to have only non-negative entries, but got %lld at "
                      "position %lld", (long long)lens[i], (long long)i + 1);
    overflow = overflow || __builtin_add_overflow(total, lens[i], &total);
  }
  if (overflow || total != x->shape[dim]) {
    char got[32];
    if (overflow) snprintf(got, sizeof got, "more than %lld", (long long)INT64_MAX);
    else snprintf(got, sizeof got, "%lld", (long long)total);
    return gs_error("split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's size at dimension "
                    "%d), but got split_sizes summing to %s", (long long)x->shape[dim], dim + 1, got);
  }
  return GS_OK;
}

gs_status gs_len(const gs_tensor *x, int64_t *out) {
  if (x->ndim == 0) return gs_error("len() of a 0-d tensor");
  *out = x->shape[0];
  return GS_OK;
}
