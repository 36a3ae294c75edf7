/* gs_autograd_ops.c: the differentiable ops: each runs the plain engine
 * op, then (grad mode on, an input requiring grad) records a node whose
 * backward function turns the output's gradient into the inputs'.
 * Formulas, with g the incoming gradient and y the output:
 *   add: g, g   sub: g, -g   mul: g*b, g*a   div: g/b, -g*a/b^2
 *   pow(a, p): g*p*a^(p-1)   exp: g*y   log: g/x   sqrt: g/(2y)
 *   relu: g*(y>0)   sigmoid: g*y*(1-y)   tanh: g*(1-y^2)   abs: g*sign(x)
 *   softmax: y*(g - sum(g*y))   log_softmax: g - exp(y)*sum(g)
 *   mm: g@b^T, a^T@g   sum: g expanded   mean: g expanded / n
 *   maximum/minimum: g to the winner, halves on ties
 *   remainder(a, b): g, -g*floor(a/b)   floor_divide: zero */
#include <math.h>
#include <string.h>
#include "autograd/gs_autograd.h"

#define SAVED(n, i) ((n)->saved[i])
#define REL(t) gs_tensor_release(t)


static gs_status mul_s(const gs_tensor *a, double s, gs_tensor **out) { return gs_binary_scalar(GS_B_MUL, a, gs_scalar_f(s), false, out); }

/* ---- unary ---- */

static gs_status bw_unary(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_unary_op op = (gs_unary_op)n->ints[0];
  gs_tensor *x = SAVED(n, 0), *y = SAVED(n, 1), *t = NULL, *u = NULL;
  gs_status s = GS_OK;
  switch (op) {
  case GS_U_NEG: return gs_unary(GS_U_NEG, g, NULL, &gr[0]);
  case GS_U_EXP: return gs_binary(GS_B_MUL, g, y, &gr[0]);
  case GS_U_LOG: return gs_binary(GS_B_DIV, g, x, &gr[0]);
  case GS_U_SQRT:
    s = mul_s(y, 2.0, &t);
    if (s == GS_OK) s = gs_binary(GS_B_DIV, g, t, &gr[0]);
    break;
  case GS_U_RELU: /* y >= 0, so sign(y) is the 0/1 mask, already float (NaN gives 0) */
    s = gs_unary(GS_U_SIGN, y, NULL, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, t, &gr[0]);
    break;
  case GS_U_SIGMOID: /* g * y * (1 - y) */
    s = gs_binary_scalar(GS_B_SUB, y, gs_scalar_i(1), true, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, y, t, &u);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, u, &gr[0]);
    break;
  case GS_U_TANH: /* g * (1 - y^2) */
    s = gs_binary(GS_B_MUL, y, y, &t);
    if (s == GS_OK) s = gs_binary_scalar(GS_B_SUB, t, gs_scalar_i(1), true, &u);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, u, &gr[0]);
    break;
  case GS_U_ABS:
    s = gs_unary(GS_U_SIGN, x, NULL, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, t, &gr[0]);
    break;
  case GS_U_SQUARE:
    s = mul_s(x, 2.0, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, t, &gr[0]);
    break;
  case GS_U_RECIPROCAL: /* -g * y^2 */
    s = gs_binary(GS_B_MUL, y, y, &t);
    if (s == GS_OK) s = mul_s(t, -1.0, &u);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, u, &gr[0]);
    break;
  case GS_U_CLAMP: { /* g where min <= x <= max */
    double lo = n->scalar[0], hi = n->scalar[1];
    gs_tensor *m1 = NULL, *m2 = NULL;
    s = isnan(lo) ? gs_binary_scalar(GS_B_EQ, x, gs_scalar_f(0), false, &m1)
                  : gs_binary_scalar(GS_B_GE, x, gs_scalar_f(lo), false, &m1);
    if (s == GS_OK && isnan(lo)) { REL(m1); s = gs_binary(GS_B_EQ, x, x, &m1); }
    if (s == GS_OK) s = isnan(hi) ? gs_binary(GS_B_EQ, x, x, &m2) : gs_binary_scalar(GS_B_LE, x, gs_scalar_f(hi), false, &m2);
    if (s == GS_OK) s = gs_binary(GS_B_LOGICAL_AND, m1, m2, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, t, &gr[0]);
    REL(m1); REL(m2);
    break;
  }
  case GS_U_SIN:
    s = gs_unary(GS_U_COS, x, NULL, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, t, &gr[0]);
    break;
  case GS_U_COS:
    s = gs_unary(GS_U_SIN, x, NULL, &t);
    if (s == GS_OK) s = mul_s(t, -1.0, &u);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, u, &gr[0]);
    break;
  case GS_U_LOG1P:
    s = gs_binary_scalar(GS_B_ADD, x, gs_scalar_i(1), false, &t);
    if (s == GS_OK) s = gs_binary(GS_B_DIV, g, t, &gr[0]);
    break;
  case GS_U_EXPM1:
    s = gs_binary_scalar(GS_B_ADD, y, gs_scalar_i(1), false, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, t, &gr[0]);
    break;
  case GS_U_ERF: /* g * 2/sqrt(pi) * exp(-x^2) */
    s = gs_unary(GS_U_SQUARE, x, NULL, &t);
    if (s == GS_OK) s = mul_s(t, -1.0, &u);
    if (s == GS_OK) { REL(t); s = gs_unary(GS_U_EXP, u, NULL, &t); }
    if (s == GS_OK) { REL(u); s = mul_s(t, 1.1283791670955126, &u); }
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, u, &gr[0]);
    break;
  case GS_U_RSQRT: /* -0.5 * g * y^3 */
    s = gs_binary_scalar(GS_B_POW, y, gs_scalar_i(3), false, &t);
    if (s == GS_OK) s = mul_s(t, -0.5, &u);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, u, &gr[0]);
    break;
  default: /* floor, ceil, round, trunc, sign: zero gradient */
    s = gs_binary_scalar(GS_B_MUL, g, gs_scalar_i(0), false, &gr[0]);
    break;
  }
  REL(t); REL(u);
  return s;
}

/* Whether bw_unary reads the op's output (y) or its input (x). */
static bool unary_uses(gs_unary_op op, bool output) {
  switch (op) {
  case GS_U_EXP: case GS_U_SQRT: case GS_U_RELU: case GS_U_SIGMOID: case GS_U_TANH: case GS_U_RECIPROCAL:
  case GS_U_EXPM1: case GS_U_RSQRT:
    return output;
  case GS_U_LOG: case GS_U_ABS: case GS_U_SQUARE: case GS_U_CLAMP: case GS_U_SIN: case GS_U_COS: case GS_U_LOG1P:
  case GS_U_ERF:
    return !output;
  default:
    return false;
  }
}

gs_status gs_ag_unary(gs_unary_op op, gs_tensor *x, const double *args, gs_tensor **out) {
  GS_TRY(gs_unary(op, x, args, out));
#define GRAD_U(ID, name, method, inplace, grad) [GS_U_##ID] = grad,
  static const char *const names[GS_U_COUNT] = {GS_UNARY_OPS(GRAD_U)};
  if (!names[op] || !gs_dtype_is_float((*out)->dtype) || !gs_ag_wants(&x, 1)) return GS_OK;
  gs_node *n = gs_node_new(names[op], bw_unary, 1, &x);
  gs_status s = GS_OK;
  if (n) {
    n->ints[0] = op;
    n->scalar[0] = args ? args[0] : NAN;
    n->scalar[1] = args ? args[1] : NAN;
    /* what the formula reads, as PyTorch saves it (self or result): a
     * value saved needlessly would refuse an in-place write PyTorch allows */
    if (unary_uses(op, false)) s = gs_node_save(n, 0, x);
    if (s == GS_OK && unary_uses(op, true)) s = gs_node_save(n, 1, *out);
  }
  return gs_ag_record(n, out, s);
}

/* ---- binary (tensor op tensor, or tensor op number) ---- */

/* maximum/minimum: the larger (smaller) input takes g; a tie splits it
 * in halves, as PyTorch does. b may be NULL (then the number c). */
static gs_status bw_extreme(bool is_max, gs_tensor *a, gs_tensor *b, double c, gs_tensor *g, gs_tensor **gr) {
  gs_binary_op wins = is_max ? GS_B_GT : GS_B_LT, loses = is_max ? GS_B_LT : GS_B_GT;
  gs_tensor *tie = NULL, *half = NULL, *m = NULL, *w = NULL;
  gs_status s = b ? gs_binary(GS_B_EQ, a, b, &tie) : gs_binary_scalar(GS_B_EQ, a, gs_scalar_f(c), false, &tie);
  if (s == GS_OK) s = gs_binary_scalar(GS_B_MUL, tie, gs_scalar_f(0.5), false, &half);
  for (int i = 0; i < (b ? 2 : 1) && s == GS_OK; i++) {
    gs_binary_op op = i == 0 ? wins : loses;
    s = b ? gs_binary(op, a, b, &m) : gs_binary_scalar(op, a, gs_scalar_f(c), false, &m);
    if (s == GS_OK) s = gs_binary(GS_B_ADD, half, m, &w);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, w, &gr[i]);
    REL(m); REL(w);
    m = w = NULL;
  }
  REL(tie); REL(half);
  return s;
}

static gs_status bw_binary(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_binary_op op = (gs_binary_op)n->ints[0];
  bool has_b = n->ints[1]; /* else b is the number in scalar[0] */
  bool reversed = n->ints[2];
  gs_tensor *a = SAVED(n, 0), *b = SAVED(n, 1), *y = SAVED(n, 2), *t = NULL, *u = NULL;
  double c = n->scalar[0];
  gs_status s = GS_OK;
  switch (op) {
  case GS_B_ADD:
    gs_tensor_retain(g); gr[0] = g;
    if (has_b) { gs_tensor_retain(g); gr[1] = g; }
    break;
  case GS_B_SUB:
    if (!has_b) { s = reversed ? mul_s(g, -1.0, &gr[0]) : (gs_tensor_retain(g), gr[0] = g, GS_OK); break; }
    gs_tensor_retain(g); gr[0] = g;
    s = mul_s(g, -1.0, &gr[1]);
    break;
  case GS_B_MUL:
    if (!has_b) { s = mul_s(g, c, &gr[0]); break; }
    if (b) s = gs_binary(GS_B_MUL, g, b, &gr[0]);      /* saved only when a needs it */
    if (s == GS_OK && a) s = gs_binary(GS_B_MUL, g, a, &gr[1]);
    break;
  case GS_B_DIV:
    if (!has_b && !reversed) { s = mul_s(g, 1.0 / c, &gr[0]); break; }
    if (!has_b) { /* c / a: -g * c / a^2 = -g * y / a */
      s = gs_binary(GS_B_DIV, y, a, &t);
      if (s == GS_OK) s = gs_binary(GS_B_MUL, g, t, &u);
      if (s == GS_OK) s = mul_s(u, -1.0, &gr[0]);
      break;
    }
    s = gs_binary(GS_B_DIV, g, b, &gr[0]);
    if (!a) break;                                               /* b needs no gradient */
    if (s == GS_OK) s = gs_binary(GS_B_DIV, a, b, &t);           /* -g * (a/b) / b */
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, t, &u);
    REL(t); t = NULL;
    if (s == GS_OK) s = gs_binary(GS_B_DIV, u, b, &t);
    if (s == GS_OK) s = mul_s(t, -1.0, &gr[1]);
    break;
  case GS_B_POW:
    if (!has_b && !reversed) { /* a^c: g * c * a^(c-1) */
      s = c == 2.0 ? (gs_tensor_retain(a), t = a, GS_OK) : gs_binary_scalar(GS_B_POW, a, gs_scalar_f(c - 1), false, &t);
      if (s == GS_OK) s = mul_s(t, c, &u);
      if (s == GS_OK) s = gs_binary(GS_B_MUL, g, u, &gr[0]);
      break;
    }
    if (!has_b) { /* c^a: g * y * log(c) */
      s = gs_binary(GS_B_MUL, g, y, &t);
      if (s == GS_OK) s = mul_s(t, log(c), &gr[0]);
      break;
    }
    /* a^b: g*b*a^(b-1) and g*y*log(a) */
    s = gs_binary(GS_B_DIV, y, a, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, t, b, &u);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, u, &gr[0]);
    REL(t); REL(u); t = u = NULL;
    if (s == GS_OK) s = gs_unary(GS_U_LOG, a, NULL, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, y, t, &u);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, u, &gr[1]);
    break;
  case GS_B_MAXIMUM: case GS_B_MINIMUM:
    s = bw_extreme(op == GS_B_MAXIMUM, a, b, c, g, gr);
    break;
  case GS_B_REMAINDER: /* a - floor(a/b)*b: g, and -g*floor(a/b) */
    if (!has_b && !reversed) { gs_tensor_retain(g); gr[0] = g; break; }
    s = has_b ? gs_binary(GS_B_FLOOR_DIV, a, b, &t) : gs_binary_scalar(GS_B_FLOOR_DIV, a, gs_scalar_f(c), true, &t);
    if (s == GS_OK) s = gs_binary(GS_B_MUL, g, t, &u);
    if (s == GS_OK) s = mul_s(u, -1.0, has_b ? &gr[1] : &gr[0]);
    if (s == GS_OK && has_b) { gs_tensor_retain(g); gr[0] = g; }
    break;
  case GS_B_FLOOR_DIV: /* piecewise constant: zero almost everywhere, as floor */
    s = mul_s(g, 0.0, &gr[0]);
    if (s == GS_OK && has_b) s = mul_s(g, 0.0, &gr[1]);
    break;
  default:
    return gs_error("%s has no gradient", n->name);
  }
  REL(t); REL(u);
  if (s == GS_OK && !has_b && reversed && gr[1]) { REL(gr[1]); gr[1] = NULL; }
  return s;
}

static gs_status record_binary(gs_binary_op op, gs_tensor *a, gs_tensor *b, double c, bool reversed, gs_tensor *out) {
#define GRAD_B(ID, name, method, inplace, grad) [GS_B_##ID] = grad,
  static const char *const names[GS_B_COUNT] = {GS_BINARY_OPS(GRAD_B)};
  const char *name = names[op];
  if (!name || !gs_dtype_is_float(out->dtype)) return GS_OK;
  gs_tensor *ins[2] = {a, b};
  if (!gs_ag_wants(ins, b ? 2 : 1)) return GS_OK;
  if (!b && op == GS_B_POW) name = reversed ? "PowBackward1" : "PowBackward0";
  if (!b && op == GS_B_REMAINDER) name = "RemainderBackward0";
  gs_node *n = gs_node_new(name, bw_binary, b ? 2 : 1, ins);
  gs_status s = GS_OK;
  if (n) {
    n->ints[0] = op;
    n->ints[1] = b != NULL;
    n->ints[2] = reversed;
    n->scalar[0] = c;
    /* what the formulas read, as PyTorch saves it: a value saved
     * needlessly would refuse an in-place write that PyTorch allows */
    bool ga = gs_requires_grad(a), gb = b && gs_requires_grad(b);
    bool save_a = false, save_b = false, save_y = false;
    switch (op) {
    case GS_B_MUL: save_a = gb; save_b = b && ga; break;                    /* g*b, g*a */
    case GS_B_DIV: save_a = b ? gb : reversed; save_b = b != NULL; save_y = !b && reversed; break;
    case GS_B_POW: save_a = b || !reversed; save_b = b != NULL; save_y = b || reversed; break;
    case GS_B_MAXIMUM: case GS_B_MINIMUM: case GS_B_REMAINDER: save_a = true; save_b = b != NULL; break;
    default: break;
    }
    if (save_a) s = gs_node_save(n, 0, a);
    if (s == GS_OK && save_b) s = gs_node_save(n, 1, b);
    if (s == GS_OK && save_y) s = gs_node_save(n, 2, out);
  }
  return gs_ag_attach(n, out, s);
}

gs_status gs_ag_binary(gs_binary_op op, gs_tensor *a, gs_tensor *b, gs_tensor **out) {
  GS_TRY(gs_binary(op, a, b, out));
  gs_status s = record_binary(op, a, b, 0, false, *out);
  if (s != GS_OK) { REL(*out); *out = NULL; }
  return s;
}

gs_status gs_ag_binary_scalar(gs_binary_op op, gs_tensor *a, gs_scalar sc, bool reversed, gs_tensor **out) {
  GS_TRY(gs_binary_scalar(op, a, sc, reversed, out));
  double c = sc.is_float ? sc.f : (double)sc.i;
  gs_status s = record_binary(op, a, NULL, c, reversed, *out);
  if (s != GS_OK) { REL(*out); *out = NULL; }
  return s;
}
