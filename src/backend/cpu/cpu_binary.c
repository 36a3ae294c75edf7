/* cpu_binary.c: binary elementwise kernels for float32, float64 and int64.
 * Each inner loop has a contiguous fast path (vectorised by the compiler),
 * a tensor-op-scalar path, and a general strided path. Integer arithmetic
 * wraps like PyTorch's (done in unsigned to avoid C's overflow UB);
 * integer division by zero is reported instead of trapping. */
#include <math.h>
#include "backend/cpu/cpu_binary.h"
#include "backend/cpu/cpu_iter.h"
#include "backend/cpu/cpu_isa.h" /* a copy of each loop per instruction set */
#include "backend/cpu/cpu_math.h"
#include "core/gs_elemmath.h"

typedef struct { int zero_div; } bin_ctx;

#define U64(x) ((uint64_t)(x))
static inline int64_t i_add(int64_t a, int64_t b) { return (int64_t)(U64(a) + U64(b)); }
static inline int64_t i_sub(int64_t a, int64_t b) { return (int64_t)(U64(a) - U64(b)); }
static inline int64_t i_mul(int64_t a, int64_t b) { return (int64_t)(U64(a) * U64(b)); }
/* the division rules are shared with the CUDA kernels (gs_elemmath.h) */
#define i_floordiv(a, b, c) gs_int_floordiv(a, b, &(c)->zero_div)
#define i_rem(a, b, c) gs_int_remainder(a, b, &(c)->zero_div)
#define i_pow gs_int_pow
#define f_floordiv gs_float_floordiv
#define f_rem gs_float_remainder
#define F_MAX(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (a) > (b) ? (a) : (b))
#define F_MIN(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (a) < (b) ? (a) : (b))
#define I_MAX(a, b) ((a) > (b) ? (a) : (b))
#define I_MIN(a, b) ((a) < (b) ? (a) : (b))

/* One inner loop: out[i] = EXPR(a[i], b[i]) with the three layouts. */
#define LOOP(NAME, TA, TO, EXPR)                                                   \
  GS_ISA_INLINE static void NAME##_impl(char **d, const int64_t *s, int64_t n, void *vctx) {       \
    bin_ctx *ctx = vctx; (void)ctx;                                                \
    TO *restrict o = (TO *)d[0];                                                   \
    const TA *restrict pa = (const TA *)d[1], *restrict pb = (const TA *)d[2];     \
    if (s[0] == sizeof(TO) && s[1] == sizeof(TA) && s[2] == sizeof(TA)) {         \
      for (int64_t i = 0; i < n; i++) { TA a = pa[i], b = pb[i]; o[i] = (TO)(EXPR); } \
    } else if (s[0] == sizeof(TO) && s[1] == sizeof(TA) && s[2] == 0) {           \
      TA b = pb[0];                                                                \
      for (int64_t i = 0; i < n; i++) { TA a = pa[i]; o[i] = (TO)(EXPR); }          \
    } else if (s[0] == sizeof(TO) && s[1] == 0 && s[2] == sizeof(TA)) {           \
      TA a = pa[0];                                                                \
      for (int64_t i = 0; i < n; i++) { TA b = pb[i]; o[i] = (TO)(EXPR); }          \
    } else {                                                                       \
      char *po = d[0]; const char *qa = d[1], *qb = d[2];                          \
      for (int64_t i = 0; i < n; i++, po += s[0], qa += s[1], qb += s[2]) {       \
        TA a = *(const TA *)qa, b = *(const TA *)qb; *(TO *)po = (TO)(EXPR);       \
      }                                                                            \
    }                                                                              \
  }                                                                                \
  GS_ISA_VOID(NAME, (char **d, const int64_t *s, int64_t n, void *vctx), (d, s, n, vctx))

/* float kernels for one type */
#define FLOAT_LOOPS(T, S)                                                \
  LOOP(add_##S, T, T, a + b)                                           \
  LOOP(sub_##S, T, T, a - b)                                           \
  LOOP(mul_##S, T, T, a * b)                                           \
  LOOP(div_##S, T, T, a / b)                                           \
  LOOP(floor_divide_##S, T, T, f_floordiv(a, b))                       \
  LOOP(remainder_##S, T, T, f_rem(a, b))                               \
  LOOP(pow_##S, T, T, pow(a, b))                                       \
  LOOP(maximum_##S, T, T, F_MAX(a, b))                                 \
  LOOP(minimum_##S, T, T, F_MIN(a, b))                                 \
  LOOP(eq_##S, T, uint8_t, a == b)                                     \
  LOOP(ne_##S, T, uint8_t, a != b)                                     \
  LOOP(lt_##S, T, uint8_t, a < b)                                      \
  LOOP(le_##S, T, uint8_t, a <= b)                                     \
  LOOP(gt_##S, T, uint8_t, a > b)                                      \
  LOOP(ge_##S, T, uint8_t, a >= b)                                     \
  LOOP(logical_and_##S, T, uint8_t, (a != 0) & (b != 0))               \
  LOOP(logical_or_##S, T, uint8_t, (a != 0) | (b != 0))

FLOAT_LOOPS(float, f32)
FLOAT_LOOPS(double, f64)
/* every binary op has a float kernel named after it (gs_op_list.h) */
#define KERNEL_F32(ID, name, ...) [GS_B_##ID] = name##_f32,
#define KERNEL_F64(ID, name, ...) [GS_B_##ID] = name##_f64,
static const gs_loop_fn loops_f32[GS_B_COUNT] = {GS_BINARY_OPS(KERNEL_F32)};
static const gs_loop_fn loops_f64[GS_B_COUNT] = {GS_BINARY_OPS(KERNEL_F64)};

LOOP(add_i64, int64_t, int64_t, i_add(a, b))
LOOP(sub_i64, int64_t, int64_t, i_sub(a, b))
LOOP(mul_i64, int64_t, int64_t, i_mul(a, b))
LOOP(floor_divide_i64, int64_t, int64_t, i_floordiv(a, b, ctx))
LOOP(remainder_i64, int64_t, int64_t, i_rem(a, b, ctx))
LOOP(pow_i64, int64_t, int64_t, i_pow(a, b))
LOOP(maximum_i64, int64_t, int64_t, I_MAX(a, b))
LOOP(minimum_i64, int64_t, int64_t, I_MIN(a, b))
LOOP(eq_i64, int64_t, uint8_t, a == b)
LOOP(ne_i64, int64_t, uint8_t, a != b)
LOOP(lt_i64, int64_t, uint8_t, a < b)
LOOP(le_i64, int64_t, uint8_t, a <= b)
LOOP(gt_i64, int64_t, uint8_t, a > b)
LOOP(ge_i64, int64_t, uint8_t, a >= b)
LOOP(logical_and_i64, int64_t, uint8_t, (a != 0) & (b != 0))
LOOP(logical_or_i64, int64_t, uint8_t, (a != 0) | (b != 0))
/* true division of integers never reaches a kernel: the op layer casts
 * to float first */
#define div_i64 NULL
static const gs_loop_fn loops_i64[GS_B_COUNT] = {
#define KERNEL_I64(ID, name, ...) [GS_B_##ID] = name##_i64,
  GS_BINARY_OPS(KERNEL_I64)};

gs_status gs_cpu_binary_flagged(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b,
                                gs_devflag *flag) {
  const gs_loop_fn *table = a->dtype == GS_FLOAT32 ? loops_f32 : a->dtype == GS_FLOAT64 ? loops_f64
                          : a->dtype == GS_INT64 ? loops_i64 : NULL;
  if (!table || !table[op]) return gs_error("binary op %d: no CPU kernel for %s", op, gs_dtype_name(a->dtype));
  bin_ctx ctx = {0};
  const gs_tensor *ops[3] = {out, a, b};
  /* integer division checks a flag written by every thread: run serially */
  bool serial = op == GS_B_FLOOR_DIV || op == GS_B_REMAINDER;
  GS_TRY(gs_cpu_foreach(3, ops, table[op], &ctx, serial && a->dtype == GS_INT64));
  if (!ctx.zero_div) return GS_OK;
  int code = op == GS_B_FLOOR_DIV ? GS_FLAG_FLOOR_DIVIDE_BY_ZERO : GS_FLAG_REMAINDER_BY_ZERO;
  if (flag) {
    gs_devflag_raise(flag, code, 0, 0, 0);
    return GS_OK;
  }
  gs_devflag f = {.code = code};
  char what[128];
  gs_devflag_describe(&f, what, sizeof what);
  return gs_error("%s", what);
}

gs_status gs_cpu_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b) {
  return gs_cpu_binary_flagged(op, out, a, b, NULL);
}
