/* gs_op_list.h: each family of ops declared once, as an X-macro list.
 * The enums, the engine's op names (messages, placement log), the Lua
 * methods, the grad_fn names and the CPU kernel tables are all expanded
 * from these lists, so adding an op is one line here plus its kernels and
 * its formulas; no table depends on the position of an entry in another.
 * Plain preprocessor text: C and CUDA sources both read it.
 *
 * Columns, by family:
 *   ID      the enum constant is GS_U_<ID> / GS_B_<ID> / GS_R_<ID>
 *   name    the op's name: in messages, as the Lua method, and as the CPU
 *           kernels' prefix (<name>_f32, <name>_f64, <name>_i64)
 *   method  1 when the generic Lua binding makes x:<name>(...) (0: the op
 *           has a binding of its own, e.g. add's alpha, clamp's bounds)
 *   inplace 1 when Lua also gets x:<name>_(...)
 *   grad    PyTorch's grad_fn name for the recorded node, or NULL when the
 *           op records none */
#ifndef GS_OP_LIST_H
#define GS_OP_LIST_H

/* X(ID, name, method, inplace, grad); CLAMP's args are min, max (NaN: unbounded) */
#define GS_UNARY_OPS(X)                                    \
  X(NEG, neg, 1, 1, "NegBackward0")                        \
  X(ABS, abs, 1, 1, "AbsBackward0")                        \
  X(EXP, exp, 1, 1, "ExpBackward0")                        \
  X(LOG, log, 1, 1, "LogBackward0")                        \
  X(SQRT, sqrt, 1, 1, "SqrtBackward0")                     \
  X(RSQRT, rsqrt, 1, 1, "RsqrtBackward0")                  \
  X(SIGMOID, sigmoid, 1, 1, "SigmoidBackward0")            \
  X(TANH, tanh, 1, 1, "TanhBackward0")                     \
  X(RELU, relu, 1, 1, "ReluBackward0")                     \
  X(SIN, sin, 1, 1, "SinBackward0")                        \
  X(COS, cos, 1, 1, "CosBackward0")                        \
  X(FLOOR, floor, 1, 1, "FloorBackward0")                  \
  X(CEIL, ceil, 1, 1, "CeilBackward0")                     \
  X(ROUND, round, 1, 1, "RoundBackward0")                  \
  X(TRUNC, trunc, 1, 1, "TruncBackward0")                  \
  X(SIGN, sign, 1, 1, "SignBackward0")                     \
  X(RECIPROCAL, reciprocal, 1, 1, "ReciprocalBackward0")   \
  X(LOG1P, log1p, 1, 1, "Log1PBackward0")                  \
  X(EXPM1, expm1, 1, 1, "Expm1Backward0")                  \
  X(ERF, erf, 1, 1, "ErfBackward0")                        \
  X(SQUARE, square, 1, 1, "PowBackward0")                  \
  X(LOGICAL_NOT, logical_not, 1, 1, NULL)                  \
  X(CLAMP, clamp, 0, 0, "ClampBackward1")

/* X(ID, name, method, inplace, grad). Comparisons and logic come last and
 * write a bool output (the CUDA kernels test op >= GS_B_EQ). POW's grad is
 * for tensor ** tensor; with a number it is PowBackward0 (x ** c) or
 * PowBackward1 (c ** x). REMAINDER with a number is RemainderBackward0. */
#define GS_BINARY_OPS(X)                                   \
  X(ADD, add, 0, 1, "AddBackward0")                        \
  X(SUB, sub, 0, 1, "SubBackward0")                        \
  X(MUL, mul, 1, 1, "MulBackward0")                        \
  X(DIV, div, 1, 1, "DivBackward0")                        \
  X(FLOOR_DIV, floor_divide, 1, 1, "FloorDivideBackward0") \
  X(REMAINDER, remainder, 1, 1, "RemainderBackward1")      \
  X(POW, pow, 1, 1, "PowBackward1")                        \
  X(MAXIMUM, maximum, 1, 0, "MaximumBackward0")            \
  X(MINIMUM, minimum, 1, 0, "MinimumBackward0")            \
  X(EQ, eq, 1, 0, NULL)                                    \
  X(NE, ne, 1, 0, NULL)                                    \
  X(LT, lt, 1, 0, NULL)                                    \
  X(LE, le, 1, 0, NULL)                                    \
  X(GT, gt, 1, 0, NULL)                                    \
  X(GE, ge, 1, 0, NULL)                                    \
  X(LOGICAL_AND, logical_and, 1, 0, NULL)                  \
  X(LOGICAL_OR, logical_or, 1, 0, NULL)

/* X(ID, name): the Lua method x:<name>([dim[, keepdim]]); the grad_fn
 * names depend on the form (whole tensor or along a dim), so the autograd
 * ops pick them. */
#define GS_REDUCE_OPS(X) \
  X(SUM, sum)            \
  X(PROD, prod)          \
  X(MAX, max)            \
  X(MIN, min)            \
  X(ARGMAX, argmax)      \
  X(ARGMIN, argmin)

/* Helpers for expanding a list into an enum or a table indexed by it. */
#define GS_OP_ENUM_U(ID, ...) GS_U_##ID,
#define GS_OP_ENUM_B(ID, ...) GS_B_##ID,
#define GS_OP_ENUM_R(ID, ...) GS_R_##ID,

#endif
