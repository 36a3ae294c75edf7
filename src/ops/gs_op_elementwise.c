/* gs_op_elementwise.c: unary and binary ops: result dtype, broadcasting,
 * casting into the kernels' compute dtype, dispatch, and in-place forms
 * that leave their target untouched when they fail. */
#include <math.h>
#include <string.h>
#include "ops/gs_ops.h"

static bool unary_keeps_ints(gs_unary_op op) {
  switch (op) {
  case GS_U_NEG: case GS_U_ABS: case GS_U_RELU: case GS_U_FLOOR: case GS_U_CEIL: case GS_U_ROUND:
  case GS_U_TRUNC: case GS_U_SIGN: case GS_U_SQUARE: case GS_U_CLAMP: case GS_U_LOGICAL_NOT:
    return true;
  default: return false;
  }
}

/* The dtype an op's result has for input dtype t. */
static gs_dtype unary_result(gs_unary_op op, gs_dtype t) {
  if (op == GS_U_LOGICAL_NOT) return GS_BOOL;
  if (gs_dtype_is_float(t) || unary_keeps_ints(op)) return t;
  return GS_FLOAT32; /* exp of an integer tensor is float, as in PyTorch */
}

static gs_status unary_check(gs_unary_op op, const gs_tensor *x, const double *args) {
  if (op == GS_U_CLAMP && (!args || (isnan(args[0]) && isnan(args[1]))))
    return gs_error("torch.clamp: At least one of 'min' or 'max' must not be None");
  if (x->dtype == GS_BOOL && (op == GS_U_NEG))
    return gs_error("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                    "invert a mask, use the `~` or `logical_not()` operator instead.");
  return GS_OK;
}

/* Computes op(x) into a new tensor of dtype rt (no in-place). */
static gs_status unary_compute(gs_unary_op op, const gs_tensor *x, const double *args, gs_dtype rt, gs_tensor **out) {
  const gs_backend *be;
  GS_DISPATCH(be, x, unary, gs_unary_name(op));
  gs_dtype cdt = gs_compute_dtype(rt == GS_BOOL ? x->dtype : rt);
  gs_tensor *cx = NULL, *r = NULL, *final = NULL;
  gs_status s = gs_cast(x, cdt, &cx);
  if (s == GS_OK) s = gs_tensor_empty(gs_tensor_device(x), op == GS_U_LOGICAL_NOT ? GS_BOOL : cdt, x->ndim, x->shape, &r);
  if (s == GS_OK) { gs_log_op(gs_unary_name(op), x); s = be->unary(op, r, cx, args); }
  if (s == GS_OK) s = gs_cast(r, rt, &final);
  gs_tensor_release(cx);
  gs_tensor_release(r);
  if (s == GS_OK) *out = final;
  return s;
}

/* The in-place ops' general path: the result r computed out of place,
 * then copied into x (converting to x's dtype); r is released. */
static gs_status copy_into(gs_tensor *x, gs_tensor *r) {
  gs_status s = gs_copy_(x, r);
  gs_tensor_release(r);
  return s;
}

gs_status gs_unary(gs_unary_op op, const gs_tensor *x, const double *args, gs_tensor **out) {
  GS_TRY(unary_check(op, x, args));
  return unary_compute(op, x, args, unary_result(op, x->dtype), out);
}

gs_status gs_unary_(gs_unary_op op, gs_tensor *x, const double *args) {
  GS_TRY(unary_check(op, x, args));
  GS_TRY(gs_check_writable(x));
  gs_dtype rt = unary_result(op, x->dtype);
  if (rt != x->dtype)
    return gs_error("result type %s can't be cast to the desired output type %s", gs_dtype_torch_name(rt),
                    gs_dtype_torch_name(x->dtype));
  const gs_backend *be;
  GS_DISPATCH(be, x, unary, gs_unary_name(op));
  if (gs_is_contiguous(x) && x->dtype == gs_compute_dtype(x->dtype) && op != GS_U_LOGICAL_NOT) {
    gs_log_op(gs_unary_name(op), x);
    GS_TRY(be->unary(op, x, x, args));
    x->buf->version++;
    return GS_OK;
  }
  gs_tensor *r;
  GS_TRY(unary_compute(op, x, args, rt, &r));
  return copy_into(x, r);
}

static bool is_comparison(gs_binary_op op) { return op >= GS_B_EQ; }

/* Result dtype of a binary op given the promoted input dtype. */
static gs_dtype binary_result(gs_binary_op op, gs_dtype promoted) {
  if (is_comparison(op)) return GS_BOOL;
  if (op == GS_B_DIV && !gs_dtype_is_float(promoted)) return GS_FLOAT32;
  return promoted;
}

/* PyTorch refuses a bool operand on either side of a subtraction, not only
 * two bools (float_tensor - bool_tensor is an error too). */
static gs_status binary_check(gs_binary_op op, const gs_tensor *a, const gs_tensor *b) {
  if (op == GS_B_SUB && a->dtype == GS_BOOL && b->dtype == GS_BOOL)
    return gs_error("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `~` or "
                    "`logical_not()` operator instead.");
  if (op == GS_B_SUB && (a->dtype == GS_BOOL || b->dtype == GS_BOOL))
    return gs_error("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                    "invert a mask, use the `~` or `logical_not()` operator instead.");
  return GS_OK;
}

/* PyTorch's common dtype: operands are converted to it before the op
 * (narrow integers wrap, float16 rounds), then computed in the compute
 * dtype. Comparisons use the promoted type, true division of integers
 * float32. */
static gs_dtype binary_common(gs_binary_op op, gs_dtype promoted) {
  return is_comparison(op) ? promoted : binary_result(op, promoted);
}

/* The shared path: promoted dtype known, b already on a's device. */
static gs_status binary_compute(gs_binary_op op, const gs_tensor *a, const gs_tensor *b, gs_dtype promoted,
                                gs_tensor **out) {
  GS_TRY(binary_check(op, a, b));
  const gs_backend *be;
  GS_DISPATCH(be, a, binary, gs_binary_name(op));
  gs_dtype rt = binary_result(op, promoted), common = binary_common(op, promoted);
  gs_dtype cdt = gs_compute_dtype(common);
  int nd;
  int64_t shape[GS_MAX_DIMS];
  GS_TRY(gs_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, shape));
  gs_tensor *pa = NULL, *pb = NULL, *ca = NULL, *cb = NULL, *ea = NULL, *eb = NULL, *r = NULL, *final = NULL;
  /* through the common dtype first: uint8 255 vs int8 -1 compares as
   * int16, and an int16 0-d -5 with a uint8 tensor is 251, as in PyTorch */
  gs_status s = gs_cast(a, common, &pa);
  if (s == GS_OK) s = gs_cast(b, common, &pb);
  if (s == GS_OK) s = gs_cast(pa, cdt, &ca);
  if (s == GS_OK) s = gs_cast(pb, cdt, &cb);
  if (s == GS_OK) s = gs_expand(ca, nd, shape, &ea);
  if (s == GS_OK) s = gs_expand(cb, nd, shape, &eb);
  if (s == GS_OK) s = gs_tensor_empty(gs_tensor_device(a), is_comparison(op) ? GS_BOOL : cdt, nd, shape, &r);
  if (s == GS_OK) { gs_log_op(gs_binary_name(op), a); s = be->binary(op, r, ea, eb); }
  if (s == GS_OK) s = gs_cast(r, rt, &final);
  gs_tensor_release(pa);
  gs_tensor_release(pb);
  gs_tensor_release(ca);
  gs_tensor_release(cb);
  gs_tensor_release(ea);
  gs_tensor_release(eb);
  gs_tensor_release(r);
  if (s == GS_OK) *out = final;
  return s;
}

gs_status gs_binary(gs_binary_op op, const gs_tensor *a, const gs_tensor *b, gs_tensor **out) {
  GS_TRY(gs_check_same_device(a, b));
  return binary_compute(op, a, b, gs_result_type2(a, b), out);
}

/* A Lua number as a 0-d tensor on a's device, in the dtype it promotes to. */
static gs_status scalar_tensor(const gs_tensor *a, gs_scalar s, gs_dtype dt, gs_tensor **out) {
  return gs_full(gs_tensor_device(a), dt, 0, NULL, s, out);
}

/* PyTorch refuses an integer tensor to a negative integer (Lua number)
 * power; with a tensor exponent the kernel's 0 / +-1 results stand. */
static gs_status check_int_pow(gs_binary_op op, gs_dtype promoted, gs_scalar s, bool reversed) {
  if (op == GS_B_POW && !reversed && !s.is_float && s.i < 0 && !gs_dtype_is_float(promoted))
    return gs_error("Integers to negative integer powers are not allowed.");
  /* an integer // or % by a Lua number 0 is refused here, on every device:
   * a GPU would only find it at the next synchronisation (gs_devflag.h) */
  if ((op == GS_B_FLOOR_DIV || op == GS_B_REMAINDER) && !reversed && !s.is_float && s.i == 0 &&
      !gs_dtype_is_float(promoted))
    return gs_error("ZeroDivisionError: integer division or modulo by zero");
  return GS_OK;
}

gs_status gs_binary_scalar(gs_binary_op op, const gs_tensor *a, gs_scalar s, bool reversed, gs_tensor **out) {
  gs_dtype promoted = gs_result_type_scalar(a, s);
  GS_TRY(check_int_pow(op, promoted, s, reversed));
  gs_tensor *st;
  /* the number in the common dtype (uint8 x < -3 compares with 253, a
   * float16 x * 0.1 multiplies by float16(0.1), as PyTorch does) */
  GS_TRY(scalar_tensor(a, s, binary_common(op, promoted), &st));
  gs_status r = reversed ? binary_compute(op, st, a, promoted, out) : binary_compute(op, a, st, promoted, out);
  gs_tensor_release(st);
  return r;
}

/* PyTorch's canCast: no float into an integer, nothing non-bool into bool. */
static bool can_cast(gs_dtype from, gs_dtype to) {
  if (gs_dtype_is_float(from) && !gs_dtype_is_float(to)) return false;
  if (from != GS_BOOL && to == GS_BOOL) return false;
  return true;
}

static gs_status inplace_checks(gs_binary_op op, gs_tensor *a, const gs_tensor *b, gs_dtype promoted) {
  gs_dtype rt = binary_result(op, promoted);
  if (!can_cast(rt, a->dtype))
    return gs_error("result type %s can't be cast to the desired output type %s", gs_dtype_torch_name(rt),
                    gs_dtype_torch_name(a->dtype));
  int nd;
  int64_t shape[GS_MAX_DIMS];
  GS_TRY(gs_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, shape));
  if (nd != a->ndim || memcmp(shape, a->shape, sizeof(int64_t) * (size_t)nd) != 0) {
    char s1[128], s2[128];
    gs_shape_str(a, s1, sizeof s1);
    gs_tensor tmp = {.ndim = nd};
    memcpy(tmp.shape, shape, sizeof(int64_t) * (size_t)nd);
    gs_shape_str(&tmp, s2, sizeof s2);
    return gs_error("output with shape %s doesn't match the broadcast shape %s", s1, s2);
  }
  return GS_OK;
}

/* In place: straight into a when a is contiguous and already the compute
 * dtype (and the op cannot fail halfway); otherwise out of place, then
 * copied back, so a failure leaves a untouched. */
static gs_status binary_inplace(gs_binary_op op, gs_tensor *a, const gs_tensor *b, gs_dtype promoted) {
  GS_TRY(inplace_checks(op, a, b, promoted));
  GS_TRY(gs_check_writable(a));
  bool may_fail = op == GS_B_FLOOR_DIV || op == GS_B_REMAINDER;
  const gs_backend *be;
  GS_DISPATCH(be, a, binary, gs_binary_name(op));
  if (!is_comparison(op) && !may_fail && gs_is_contiguous(a) && a->dtype == gs_compute_dtype(a->dtype) &&
      binary_result(op, promoted) == a->dtype && b->dtype == a->dtype && !gs_partial_overlap(a, b)) {
    gs_tensor *eb;
    GS_TRY(gs_expand(b, a->ndim, a->shape, &eb));
    gs_log_op(gs_binary_name(op), a);
    gs_status s = be->binary(op, a, a, eb);
    gs_tensor_release(eb);
    if (s == GS_OK) a->buf->version++;
    return s;
  }
  gs_tensor *r;
  GS_TRY(binary_compute(op, a, b, promoted, &r));
  return copy_into(a, r);
}

gs_status gs_binary_(gs_binary_op op, gs_tensor *a, const gs_tensor *b) {
  GS_TRY(gs_check_same_device(a, b));
  return binary_inplace(op, a, b, gs_result_type2(a, b));
}

gs_status gs_binary_scalar_(gs_binary_op op, gs_tensor *a, gs_scalar s) {
  gs_dtype promoted = gs_result_type_scalar(a, s);
  GS_TRY(check_int_pow(op, promoted, s, false));
  gs_tensor *st;
  GS_TRY(scalar_tensor(a, s, binary_common(op, promoted), &st));
  gs_status r = binary_inplace(op, a, st, promoted);
  gs_tensor_release(st);
  return r;
}

