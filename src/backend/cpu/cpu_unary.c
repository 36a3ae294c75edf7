/* cpu_unary.c: unary elementwise kernels (float32, float64, int64).
 * float32 exp is cpu_math.h's vectorisable one; the rest use libm. */
#include <math.h>
#include <string.h>
#include "backend/cpu/cpu_unary.h"
#include "backend/cpu/cpu_iter.h"
#include "backend/cpu/cpu_isa.h" /* a copy of each loop per instruction set */
#include "backend/cpu/cpu_math.h"

/* PyTorch's sign: (0 < x) - (x < 0), so sign(NaN) and sign(-0.0) are 0 */
static inline double sgn(double x) { return (x > 0) - (x < 0); }

typedef struct { double lo, hi; } un_ctx;

#define ULOOP(NAME, T, TO, EXPR)                                              \
  GS_ISA_INLINE static void NAME##_impl(char **d, const int64_t *s, int64_t n, void *vctx) { \
    const un_ctx *ctx = vctx; (void)ctx;                                      \
    if (s[0] == sizeof(TO) && s[1] == sizeof(T)) {                            \
      TO *restrict o = (TO *)d[0]; const T *restrict p = (const T *)d[1];     \
      for (int64_t i = 0; i < n; i++) { T x = p[i]; o[i] = (TO)(EXPR); }      \
    } else {                                                                  \
      char *po = d[0]; const char *q = d[1];                                  \
      for (int64_t i = 0; i < n; i++, po += s[0], q += s[1]) {                \
        T x = *(const T *)q; *(TO *)po = (TO)(EXPR);                          \
      }                                                                       \
    }                                                                         \
  }                                                                           \
  GS_ISA_VOID(NAME, (char **d, const int64_t *s, int64_t n, void *vctx), (d, s, n, vctx))

/* clamp with NaN bounds meaning "no bound"; NaN inputs stay NaN. As in
 * PyTorch it is min(max(x, lo), hi): when lo > hi every value becomes hi
 * (the max bound is applied last). */
#define CLAMP_LO(x, T) ((ctx->lo == ctx->lo && (x) < (T)ctx->lo) ? (T)ctx->lo : (x))
#define CLAMP(x, T) ((x) != (x) ? (x) : (ctx->hi == ctx->hi && CLAMP_LO(x, T) > (T)ctx->hi) ? (T)ctx->hi \
                     : CLAMP_LO(x, T))

#define FLOAT_ULOOPS(T, S, EXP, M)                                                     \
  ULOOP(neg_##S, T, T, -x)                                                     \
  ULOOP(abs_##S, T, T, fabs##M(x))                                             \
  ULOOP(exp_##S, T, T, EXP(x))                                                 \
  ULOOP(log_##S, T, T, log##M(x))                                              \
  ULOOP(sqrt_##S, T, T, sqrt##M(x))                                            \
  ULOOP(rsqrt_##S, T, T, (T)1 / sqrt##M(x))                                    \
  ULOOP(sigmoid_##S, T, T, (T)1 / ((T)1 + EXP(-x)))                            \
  ULOOP(tanh_##S, T, T, tanh##M(x))                                            \
  ULOOP(relu_##S, T, T, x != x ? x : x > 0 ? x : (T)0)                         \
  ULOOP(sin_##S, T, T, sin##M(x))                                              \
  ULOOP(cos_##S, T, T, cos##M(x))                                              \
  ULOOP(floor_##S, T, T, floor##M(x))                                          \
  ULOOP(ceil_##S, T, T, ceil##M(x))                                            \
  ULOOP(round_##S, T, T, nearbyint##M(x))                                      \
  ULOOP(trunc_##S, T, T, trunc##M(x))                                          \
  ULOOP(sign_##S, T, T, (T)sgn(x))                                             \
  ULOOP(reciprocal_##S, T, T, (T)1 / x)                                        \
  ULOOP(log1p_##S, T, T, log1p##M(x))                                          \
  ULOOP(expm1_##S, T, T, expm1##M(x))                                          \
  ULOOP(erf_##S, T, T, erf##M(x))                                              \
  ULOOP(square_##S, T, T, x * x)                                               \
  ULOOP(logical_not_##S, T, uint8_t, x == 0)                                   \
  ULOOP(clamp_##S, T, T, CLAMP(x, T))

FLOAT_ULOOPS(float, f32, fast_expf, f)
FLOAT_ULOOPS(double, f64, exp, )
/* every unary op has a float kernel named after it (gs_op_list.h) */
#define KERNEL_F32(ID, name, ...) [GS_U_##ID] = name##_f32,
#define KERNEL_F64(ID, name, ...) [GS_U_##ID] = name##_f64,
static const gs_loop_fn uloops_f32[GS_U_COUNT] = {GS_UNARY_OPS(KERNEL_F32)};
static const gs_loop_fn uloops_f64[GS_U_COUNT] = {GS_UNARY_OPS(KERNEL_F64)};

#define I64 int64_t
ULOOP(neg_i64, I64, I64, (I64)(0 - (uint64_t)x))
ULOOP(abs_i64, I64, I64, x < 0 ? (I64)(0 - (uint64_t)x) : x)
ULOOP(relu_i64, I64, I64, x > 0 ? x : 0)
ULOOP(id_i64, I64, I64, x)
ULOOP(sign_i64, I64, I64, (x > 0) - (x < 0))
ULOOP(square_i64, I64, I64, (I64)((uint64_t)x * (uint64_t)x))
ULOOP(logical_not_i64, I64, uint8_t, x == 0)
static void clamp_i64(char **d, const int64_t *s, int64_t n, void *vctx) {
  const un_ctx *ctx = vctx;
  bool has_lo = ctx->lo == ctx->lo, has_hi = ctx->hi == ctx->hi;
  I64 lo = has_lo ? (I64)ceil(ctx->lo) : 0, hi = has_hi ? (I64)floor(ctx->hi) : 0;
  char *po = d[0];
  const char *q = d[1];
  for (int64_t i = 0; i < n; i++, po += s[0], q += s[1]) {
    I64 x = *(const I64 *)q;
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    *(I64 *)po = x;
  }
}
/* integer inputs to exp, log, ... are cast to float by the op layer */
static const gs_loop_fn uloops_i64[GS_U_COUNT] = {
  [GS_U_NEG] = neg_i64, [GS_U_ABS] = abs_i64, [GS_U_RELU] = relu_i64,
  [GS_U_FLOOR] = id_i64, [GS_U_CEIL] = id_i64, [GS_U_ROUND] = id_i64, [GS_U_TRUNC] = id_i64,
  [GS_U_SIGN] = sign_i64, [GS_U_SQUARE] = square_i64, [GS_U_LOGICAL_NOT] = logical_not_i64,
  [GS_U_CLAMP] = clamp_i64};

gs_status gs_cpu_unary(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args) {
  const gs_loop_fn *table = x->dtype == GS_FLOAT32 ? uloops_f32 : x->dtype == GS_FLOAT64 ? uloops_f64
                          : x->dtype == GS_INT64 ? uloops_i64 : NULL;
  if (!table || !table[op]) return gs_error("unary op %d: no CPU kernel for %s", op, gs_dtype_name(x->dtype));
  un_ctx ctx = {args ? args[0] : NAN, args ? args[1] : NAN};
  const gs_tensor *ops[2] = {out, x};
  return gs_cpu_foreach(2, ops, table[op], &ctx, false);
}
