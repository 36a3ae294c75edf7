/* gs_autograd_scalars.c: ops whose numbers change what the op does, not
 * only its values: add/sub with alpha (a + alpha * b) and clamp with
 * optional bounds. Whether a number is an integer or a float is part of
 * the rule (PyTorch's result_type), so bindings pass them as gs_scalar,
 * as the user wrote them, and these decide. The in-place forms go through
 * the gs_ag_*_ ops and so through the in-place guard. */
#include <math.h>
#include "autograd/gs_autograd.h"

/* An integral operand: a tensor of an integer (or bool) dtype, or an
 * integer number (a bool number is neither, as in Lua). */
static bool integral(const gs_tensor *t, gs_scalar s) {
  return t ? !gs_dtype_is_float(t->dtype) : !s.is_float && !s.is_bool;
}

static gs_status check_alpha(const gs_tensor *a, gs_scalar as, const gs_tensor *b, gs_scalar bs, gs_scalar alpha) {
  if (alpha.is_float && integral(a, as) && integral(b, bs))
    return gs_error("For integral input tensors, argument alpha must not be a floating point number.");
  return GS_OK;
}

static bool is_one(gs_scalar s) { return s.is_float ? s.f == 1 : s.i == 1; }

/* b * alpha for a number b: an integer when both are (wrapping as int64
 * arithmetic does in PyTorch), else a float. */
static gs_scalar scale(gs_scalar b, gs_scalar alpha) {
  if (!b.is_float && !alpha.is_float) return gs_scalar_i((int64_t)((uint64_t)b.i * (uint64_t)alpha.i));
  return gs_scalar_f(b.f * alpha.f);
}

gs_status gs_ag_binary_mixed(gs_binary_op op, gs_tensor *a, gs_scalar as, gs_tensor *b, gs_scalar bs, gs_tensor **out) {
  if (a && b) return gs_ag_binary(op, a, b, out);
  if (a) return gs_ag_binary_scalar(op, a, bs, false, out);
  if (b) return gs_ag_binary_scalar(op, b, as, true, out);
  return gs_error("%s: expected a tensor on at least one side", gs_binary_name(op));
}

gs_status gs_ag_add_alpha(gs_binary_op op, gs_tensor *a, gs_scalar as, gs_tensor *b, gs_scalar bs, gs_scalar alpha,
                          gs_tensor **out) {
  if (op != GS_B_ADD && op != GS_B_SUB) return gs_error("%s takes no alpha", gs_binary_name(op));
  GS_TRY(check_alpha(a, as, b, bs, alpha));
  if (is_one(alpha)) return gs_ag_binary_mixed(op, a, as, b, bs, out);
  if (!b) return gs_ag_binary_mixed(op, a, as, NULL, scale(bs, alpha), out);
  gs_tensor *scaled;
  GS_TRY(gs_ag_binary_scalar(GS_B_MUL, b, alpha, false, &scaled)); /* recorded: b's gradient is alpha * g */
  gs_status s = gs_ag_binary_mixed(op, a, as, scaled, bs, out);
  gs_tensor_release(scaled);
  return s;
}

gs_status gs_ag_add_alpha_(gs_binary_op op, gs_tensor *x, gs_tensor *y, gs_scalar ys, gs_scalar alpha) {
  if (op != GS_B_ADD && op != GS_B_SUB) return gs_error("%s_ takes no alpha", gs_binary_name(op));
  GS_TRY(check_alpha(x, gs_scalar_i(0), y, ys, alpha));
  if (!y) return gs_ag_binary_scalar_(op, x, is_one(alpha) ? ys : scale(ys, alpha));
  if (is_one(alpha)) return gs_ag_binary_(op, x, y);
  gs_tensor *scaled;
  /* recorded, so the in-place guard sees that y requires grad */
  GS_TRY(gs_ag_binary_scalar(GS_B_MUL, y, alpha, false, &scaled));
  gs_status s = gs_ag_binary_(op, x, scaled);
  gs_tensor_release(scaled);
  return s;
}

/* CLAMP's kernel arguments: NaN for a bound not given. */
static void clamp_args(const gs_scalar *lo, const gs_scalar *hi, double *args) {
  args[0] = lo ? lo->f : NAN;
  args[1] = hi ? hi->f : NAN;
}

/* A float bound on an integer tensor promotes it, as PyTorch's
 * result_type does: clamp(int64, 1.5) is float32. */
static bool promotes(const gs_tensor *x, const gs_scalar *lo, const gs_scalar *hi) {
  return !gs_dtype_is_float(x->dtype) && ((lo && lo->is_float) || (hi && hi->is_float));
}

gs_status gs_ag_clamp(gs_tensor *x, const gs_scalar *lo, const gs_scalar *hi, gs_tensor **out) {
  double args[2];
  clamp_args(lo, hi, args);
  if (!promotes(x, lo, hi)) return gs_ag_unary(GS_U_CLAMP, x, args, out);
  gs_tensor *f;
  GS_TRY(gs_ag_to(x, gs_tensor_device(x), GS_FLOAT32, &f));
  gs_status s = gs_ag_unary(GS_U_CLAMP, f, args, out);
  gs_tensor_release(f);
  return s;
}

gs_status gs_ag_clamp_(gs_tensor *x, const gs_scalar *lo, const gs_scalar *hi) {
  double args[2];
  clamp_args(lo, hi, args);
  return gs_ag_unary_(GS_U_CLAMP, x, args);
}
