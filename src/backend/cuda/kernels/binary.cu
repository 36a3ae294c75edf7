/* binary.cu: binary elementwise kernels for float32, float64 and int64,
 * the CUDA versions of cpu_binary.c with the same semantics: PyTorch's
 * floor division and remainder (sign of the divisor), NaN-propagating
 * maximum/minimum, wrapping integer arithmetic, and float32 floor_divide,
 * remainder and pow computed in double as the CPU does. Inputs arrive
 * broadcast (stride 0), so one N-d strided index computation serves all
 * shapes, with a dense path when every operand is contiguous. Integer
 * division by zero sets the device's error record, reported as Python's
 * ZeroDivisionError at the next synchronisation. */
#include <type_traits>
#include "backend/cuda/kernels/common.cuh"
#include "core/gs_elemmath.h"

/* the division rules are shared with the CPU kernels (gs_elemmath.h) */
#define f_floordiv gs_float_floordiv
#define f_rem gs_float_remainder
#define i_floordiv gs_int_floordiv
#define i_rem gs_int_remainder
#define i_pow gs_int_pow

/* The output type of op OP on T: bool (uint8) for comparisons and logic. */
template <typename T, int OP> struct bin_out {
  typedef typename std::conditional<(OP >= GS_B_EQ), uint8_t, T>::type type;
};

template <typename T, int OP>
__device__ __forceinline__ typename bin_out<T, OP>::type bin_apply(T a, T b, int *zero_div) {
  constexpr bool is_int = std::is_integral<T>::value;
  if constexpr (OP == GS_B_ADD) { if constexpr (is_int) return (T)((uint64_t)a + (uint64_t)b); else return a + b; }
  else if constexpr (OP == GS_B_SUB) { if constexpr (is_int) return (T)((uint64_t)a - (uint64_t)b); else return a - b; }
  else if constexpr (OP == GS_B_MUL) { if constexpr (is_int) return (T)((uint64_t)a * (uint64_t)b); else return a * b; }
  else if constexpr (OP == GS_B_DIV) return a / b; /* floats only */
  else if constexpr (OP == GS_B_FLOOR_DIV) {
    if constexpr (is_int) return i_floordiv(a, b, zero_div); else return (T)f_floordiv(a, b);
  } else if constexpr (OP == GS_B_REMAINDER) {
    if constexpr (is_int) return i_rem(a, b, zero_div); else return (T)f_rem(a, b);
  } else if constexpr (OP == GS_B_POW) {
    if constexpr (is_int) return i_pow(a, b); else return (T)pow((double)a, (double)b);
  } else if constexpr (OP == GS_B_MAXIMUM) {
    if constexpr (is_int) return a > b ? a : b; else return a != a ? a : b != b ? b : a > b ? a : b;
  } else if constexpr (OP == GS_B_MINIMUM) {
    if constexpr (is_int) return a < b ? a : b; else return a != a ? a : b != b ? b : a < b ? a : b;
  }
  else if constexpr (OP == GS_B_EQ) return a == b;
  else if constexpr (OP == GS_B_NE) return a != b;
  else if constexpr (OP == GS_B_LT) return a < b;
  else if constexpr (OP == GS_B_LE) return a <= b;
  else if constexpr (OP == GS_B_GT) return a > b;
  else if constexpr (OP == GS_B_GE) return a >= b;
  else if constexpr (OP == GS_B_LOGICAL_AND) return (a != 0) & (b != 0);
  else return (a != 0) | (b != 0); /* GS_B_LOGICAL_OR */
}

template <typename T, int OP>
__global__ void binary_kernel(gs_ew_desc d, typename bin_out<T, OP>::type *out, const T *a, const T *b, int64_t n,
                              bool dense, int *zero_div) {
  if (dense) {
    GS_GRID_LOOP(i, n) out[i] = bin_apply<T, OP>(a[i], b[i], zero_div);
  } else {
    GS_GRID_LOOP(i, n) {
      int64_t off[3];
      gs_ew_offsets<3>(d, i, off);
      out[off[0]] = bin_apply<T, OP>(a[off[1]], b[off[2]], zero_div);
    }
  }
}

template <typename T, int OP>
static gs_status launch(cudaStream_t st, const gs_ew_desc *d, gs_tensor *out, const gs_tensor *a, const gs_tensor *b,
                        int64_t n, bool dense, int *zero_div) {
  typedef typename bin_out<T, OP>::type TO;
  binary_kernel<T, OP><<<gs_grid(n), GS_BLOCK, 0, st>>>(*d, (TO *)gs_tensor_ptr(out), (const T *)gs_tensor_ptr(a),
                                                        (const T *)gs_tensor_ptr(b), n, dense, zero_div);
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

#define B_CASE(T, OP) case OP: return launch<T, OP>(st, &d, out, a, b, n, dense, zero_div);
#define B_COMMON(T)                                                                                  \
  B_CASE(T, GS_B_ADD) B_CASE(T, GS_B_SUB) B_CASE(T, GS_B_MUL) B_CASE(T, GS_B_FLOOR_DIV)            \
  B_CASE(T, GS_B_REMAINDER) B_CASE(T, GS_B_POW) B_CASE(T, GS_B_MAXIMUM) B_CASE(T, GS_B_MINIMUM)    \
  B_CASE(T, GS_B_EQ) B_CASE(T, GS_B_NE) B_CASE(T, GS_B_LT) B_CASE(T, GS_B_LE) B_CASE(T, GS_B_GT)   \
  B_CASE(T, GS_B_GE) B_CASE(T, GS_B_LOGICAL_AND) B_CASE(T, GS_B_LOGICAL_OR)

template <typename T>
static gs_status dispatch(gs_binary_op op, cudaStream_t st, const gs_ew_desc &d, gs_tensor *out, const gs_tensor *a,
                          const gs_tensor *b, int64_t n, bool dense, int *zero_div) {
  if constexpr (std::is_integral<T>::value) {
    /* true division of integers never reaches a kernel: the op layer
     * casts to float first */
    switch (op) {
      B_COMMON(T)
    default: break;
    }
  } else {
    switch (op) {
      B_COMMON(T)
      B_CASE(T, GS_B_DIV)
    default: break;
    }
  }
  return gs_error("binary op %d: no CUDA kernel for %s", (int)op, gs_dtype_name(a->dtype));
}

/* Integer floor division and remainder: a division by zero sets the
 * device's error record (gs_devflag.h), reported at the next copy to the
 * host or synchronize; the host does not wait here. (A Lua number divisor
 * of 0 never gets this far: the op layer refuses it at once.) */
static gs_status int_division(gs_binary_op op, cudaStream_t st, const gs_ew_desc &d, gs_tensor *out,
                              const gs_tensor *a, const gs_tensor *b, int64_t n, bool dense) {
  gs_devflag *f = gs_cuda_flag(gs_tensor_device(a).index);
  return dispatch<int64_t>(op, st, d, out, a, b, n, dense, &f->zero_div[op == GS_B_REMAINDER ? 1 : 0]);
}

extern "C" gs_status gs_cuda_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b) {
  int64_t n = gs_numel(out);
  if (n == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(out, &st));
  const gs_tensor *ops[3] = {out, a, b};
  gs_ew_desc d;
  gs_ew_build(&d, 3, ops);
  bool dense = gs_ew_dense(&d, 0) && gs_ew_dense(&d, 1) && gs_ew_dense(&d, 2);
  switch (a->dtype) {
  case GS_FLOAT32: return dispatch<float>(op, st, d, out, a, b, n, dense, NULL);
  case GS_FLOAT64: return dispatch<double>(op, st, d, out, a, b, n, dense, NULL);
  case GS_INT64:
    if (op == GS_B_FLOOR_DIV || op == GS_B_REMAINDER) return int_division(op, st, d, out, a, b, n, dense);
    return dispatch<int64_t>(op, st, d, out, a, b, n, dense, NULL);
  default: return gs_error("binary op %d: no CUDA kernel for %s", (int)op, gs_dtype_name(a->dtype));
  }
}
