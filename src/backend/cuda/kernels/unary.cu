/* unary.cu: unary elementwise kernels for float32, float64 and int64, the
 * CUDA versions of cpu_unary.c with the same semantics (NaN stays NaN
 * through relu, sign and clamp; NaN clamp bounds mean "no bound"; integer
 * negation wraps). One kernel per (type, op), each with a dense path and a
 * strided path; out may alias x (in place). */
#include <type_traits>
#include "backend/cuda/kernels/common.cuh"

/* float/double overloads of the libm functions used below */
#define F2(NAME, FF, FD) \
  __device__ __forceinline__ float NAME(float x) { return FF(x); } \
  __device__ __forceinline__ double NAME(double x) { return FD(x); }
F2(m_abs, fabsf, fabs) F2(m_exp, expf, exp) F2(m_log, logf, log) F2(m_sqrt, sqrtf, sqrt)
F2(m_tanh, tanhf, tanh) F2(m_sin, sinf, sin) F2(m_cos, cosf, cos) F2(m_floor, floorf, floor)
F2(m_ceil, ceilf, ceil) F2(m_rint, rintf, rint) F2(m_trunc, truncf, trunc) F2(m_log1p, log1pf, log1p)
F2(m_expm1, expm1f, expm1) F2(m_erf, erff, erf)
#undef F2

struct clamp_args { double lo, hi; int64_t ilo, ihi; bool has_lo, has_hi; };

/* The result type of op OP on T: bool (uint8) for logical_not. */
template <typename T, int OP> struct un_out { typedef T type; };
template <typename T> struct un_out<T, GS_U_LOGICAL_NOT> { typedef uint8_t type; };

template <typename T, int OP>
__device__ __forceinline__ typename un_out<T, OP>::type float_op(T x, const clamp_args &c) {
  if constexpr (OP == GS_U_NEG) return -x;
  else if constexpr (OP == GS_U_ABS) return m_abs(x);
  else if constexpr (OP == GS_U_EXP) return m_exp(x);
  else if constexpr (OP == GS_U_LOG) return m_log(x);
  else if constexpr (OP == GS_U_SQRT) return m_sqrt(x);
  else if constexpr (OP == GS_U_RSQRT) return (T)1 / m_sqrt(x);
  else if constexpr (OP == GS_U_SIGMOID) return (T)1 / ((T)1 + m_exp(-x));
  else if constexpr (OP == GS_U_TANH) return m_tanh(x);
  else if constexpr (OP == GS_U_RELU) return x != x ? x : x > 0 ? x : (T)0;
  else if constexpr (OP == GS_U_SIN) return m_sin(x);
  else if constexpr (OP == GS_U_COS) return m_cos(x);
  else if constexpr (OP == GS_U_FLOOR) return m_floor(x);
  else if constexpr (OP == GS_U_CEIL) return m_ceil(x);
  else if constexpr (OP == GS_U_ROUND) return m_rint(x); /* half to even, like nearbyint */
  else if constexpr (OP == GS_U_TRUNC) return m_trunc(x);
  else if constexpr (OP == GS_U_SIGN) return x != x ? x : (T)((x > 0) - (x < 0));
  else if constexpr (OP == GS_U_RECIPROCAL) return (T)1 / x;
  else if constexpr (OP == GS_U_LOG1P) return m_log1p(x);
  else if constexpr (OP == GS_U_EXPM1) return m_expm1(x);
  else if constexpr (OP == GS_U_ERF) return m_erf(x);
  else if constexpr (OP == GS_U_SQUARE) return x * x;
  else if constexpr (OP == GS_U_LOGICAL_NOT) return (uint8_t)(x == 0);
  else { /* GS_U_CLAMP */
    if (x != x) return x;
    if (c.has_lo && x < (T)c.lo) return (T)c.lo;
    if (c.has_hi && x > (T)c.hi) return (T)c.hi;
    return x;
  }
}

template <int OP>
__device__ __forceinline__ typename un_out<int64_t, OP>::type int_op(int64_t x, const clamp_args &c) {
  if constexpr (OP == GS_U_NEG) return (int64_t)(0 - (uint64_t)x);
  else if constexpr (OP == GS_U_ABS) return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
  else if constexpr (OP == GS_U_RELU) return x > 0 ? x : 0;
  else if constexpr (OP == GS_U_SIGN) return (int64_t)((x > 0) - (x < 0));
  else if constexpr (OP == GS_U_SQUARE) return (int64_t)((uint64_t)x * (uint64_t)x);
  else if constexpr (OP == GS_U_LOGICAL_NOT) return (uint8_t)(x == 0);
  else if constexpr (OP == GS_U_CLAMP) {
    if (c.has_lo && x < c.ilo) x = c.ilo;
    if (c.has_hi && x > c.ihi) x = c.ihi;
    return x;
  } else return x; /* floor, ceil, round, trunc: the identity on integers */
}

template <typename T, int OP>
__device__ __forceinline__ typename un_out<T, OP>::type apply(T x, const clamp_args &c) {
  if constexpr (std::is_integral<T>::value) return int_op<OP>((int64_t)x, c);
  else return float_op<T, OP>(x, c);
}

template <typename T, int OP>
__global__ void unary_kernel(gs_ew_desc d, typename un_out<T, OP>::type *out, const T *x, int64_t n,
                             clamp_args c, bool dense) {
  if (dense) {
    GS_GRID_LOOP(i, n) out[i] = apply<T, OP>(x[i], c);
  } else {
    GS_GRID_LOOP(i, n) {
      int64_t off[2];
      gs_ew_offsets<2>(d, i, off);
      out[off[0]] = apply<T, OP>(x[off[1]], c);
    }
  }
}

template <typename T, int OP>
static gs_status launch(cudaStream_t st, const gs_ew_desc *d, gs_tensor *out, const gs_tensor *x, int64_t n,
                        const clamp_args *c, bool dense) {
  typedef typename un_out<T, OP>::type TO;
  unary_kernel<T, OP><<<gs_grid(n), GS_BLOCK, 0, st>>>(*d, (TO *)gs_tensor_ptr(out), (const T *)gs_tensor_ptr(x),
                                                       n, *c, dense);
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

#define U_CASE(T, OP) case OP: return launch<T, OP>(st, &d, out, x, n, &c, dense);

template <typename T>
static gs_status dispatch_float(gs_unary_op op, cudaStream_t st, const gs_ew_desc &d, gs_tensor *out,
                                const gs_tensor *x, int64_t n, const clamp_args &c, bool dense) {
  switch (op) {
    U_CASE(T, GS_U_NEG) U_CASE(T, GS_U_ABS) U_CASE(T, GS_U_EXP) U_CASE(T, GS_U_LOG) U_CASE(T, GS_U_SQRT)
    U_CASE(T, GS_U_RSQRT) U_CASE(T, GS_U_SIGMOID) U_CASE(T, GS_U_TANH) U_CASE(T, GS_U_RELU)
    U_CASE(T, GS_U_SIN) U_CASE(T, GS_U_COS) U_CASE(T, GS_U_FLOOR) U_CASE(T, GS_U_CEIL)
    U_CASE(T, GS_U_ROUND) U_CASE(T, GS_U_TRUNC) U_CASE(T, GS_U_SIGN) U_CASE(T, GS_U_RECIPROCAL)
    U_CASE(T, GS_U_LOG1P) U_CASE(T, GS_U_EXPM1) U_CASE(T, GS_U_ERF) U_CASE(T, GS_U_SQUARE) U_CASE(T, GS_U_LOGICAL_NOT)
    U_CASE(T, GS_U_CLAMP)
  default: return gs_error("unary op %d: no CUDA kernel for %s", (int)op, gs_dtype_name(x->dtype));
  }
}

/* integer inputs to exp, log, ... are cast to float by the op layer */
static gs_status dispatch_int(gs_unary_op op, cudaStream_t st, const gs_ew_desc &d, gs_tensor *out,
                              const gs_tensor *x, int64_t n, const clamp_args &c, bool dense) {
  switch (op) {
    U_CASE(int64_t, GS_U_NEG) U_CASE(int64_t, GS_U_ABS) U_CASE(int64_t, GS_U_RELU)
    U_CASE(int64_t, GS_U_FLOOR) U_CASE(int64_t, GS_U_CEIL) U_CASE(int64_t, GS_U_ROUND)
    U_CASE(int64_t, GS_U_TRUNC) U_CASE(int64_t, GS_U_SIGN) U_CASE(int64_t, GS_U_SQUARE)
    U_CASE(int64_t, GS_U_LOGICAL_NOT) U_CASE(int64_t, GS_U_CLAMP)
  default: return gs_error("unary op %d: no CUDA kernel for %s", (int)op, gs_dtype_name(x->dtype));
  }
}

/* A clamp bound as an integer: ceil for the lower bound, floor for the
 * upper one, saturated to the int64 range. */
static int64_t int_bound(double v) {
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

extern "C" gs_status gs_cuda_unary(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args) {
  int64_t n = gs_numel(x);
  if (n == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(x, &st));
  clamp_args c;
  c.lo = args ? args[0] : NAN;
  c.hi = args ? args[1] : NAN;
  c.has_lo = c.lo == c.lo;
  c.has_hi = c.hi == c.hi;
  c.ilo = c.has_lo ? int_bound(ceil(c.lo)) : 0;
  c.ihi = c.has_hi ? int_bound(floor(c.hi)) : 0;
  const gs_tensor *ops[2] = {out, x};
  gs_ew_desc d;
  gs_ew_build(&d, 2, ops);
  bool dense = gs_ew_dense(&d, 0) && gs_ew_dense(&d, 1);
  switch (x->dtype) {
  case GS_FLOAT32: return dispatch_float<float>(op, st, d, out, x, n, c, dense);
  case GS_FLOAT64: return dispatch_float<double>(op, st, d, out, x, n, c, dense);
  case GS_INT64: return dispatch_int(op, st, d, out, x, n, c, dense);
  default: return gs_error("unary op %d: no CUDA kernel for %s", (int)op, gs_dtype_name(x->dtype));
  }
}
