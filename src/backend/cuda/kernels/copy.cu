/* copy.cu: strided copy with dtype conversion between the ten dtypes,
 * fill and arange -- the CUDA versions of cpu_copy.c, element for element
 * the same results (conversions in dtype.cuh). A dense same-dtype copy is
 * one cudaMemcpyAsync; everything is queued on the device's stream. */
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/dtype.cuh"

/* ---- kernels ---- */

/* dst[i] = src[i] for one element width W (same dtype, any strides). */
template <typename W>
__global__ void move_kernel(gs_ew_desc d, W *dst, const W *src, int64_t n) {
  GS_GRID_LOOP(i, n) {
    int64_t off[2];
    gs_ew_offsets<2>(d, i, off);
    dst[off[0]] = src[off[1]];
  }
}

/* dst[i] = convert(src[i]) between any two dtypes (sizes in bytes). */
__global__ void convert_kernel(gs_ew_desc d, char *dst, int ddt, int dsz, const char *src, int sdt, int ssz,
                               int64_t n) {
  GS_GRID_LOOP(i, n) {
    int64_t off[2];
    gs_ew_offsets<2>(d, i, off);
    gs_d_store(ddt, dst + off[0] * dsz, gs_d_load(sdt, src + off[1] * ssz));
  }
}

/* dst[i] = v for one element width (the value's bits computed on the host). */
template <typename W>
__global__ void fill_kernel(gs_ew_desc d, W *dst, W v, int64_t n) {
  GS_GRID_LOOP(i, n) {
    int64_t off[1];
    gs_ew_offsets<1>(d, i, off);
    dst[off[0]] = v;
  }
}

/* dst[i] = start + i * step, exactly as gs_cpu_arange computes it. */
__global__ void arange_kernel(char *dst, int dt, int sz, double start, double step, int64_t istart, int64_t istep,
                              bool exact_int, int64_t n) {
  GS_GRID_LOOP(i, n) {
    if (exact_int) gs_d_store_i64(dt, dst + i * sz, (int64_t)((uint64_t)istart + (uint64_t)istep * (uint64_t)i));
    else gs_d_store_f64(dt, dst + i * sz, __dadd_rn(start, __dmul_rn(step, (double)i))); /* no FMA: as the host */
  }
}

/* ---- launchers ---- */

static gs_status launch_move(cudaStream_t st, const gs_ew_desc *d, size_t w, void *dst, const void *src, int64_t n) {
  unsigned g = gs_grid(n);
  switch (w) {
  case 1: move_kernel<uint8_t><<<g, GS_BLOCK, 0, st>>>(*d, (uint8_t *)dst, (const uint8_t *)src, n); break;
  case 2: move_kernel<uint16_t><<<g, GS_BLOCK, 0, st>>>(*d, (uint16_t *)dst, (const uint16_t *)src, n); break;
  case 4: move_kernel<uint32_t><<<g, GS_BLOCK, 0, st>>>(*d, (uint32_t *)dst, (const uint32_t *)src, n); break;
  default: move_kernel<uint64_t><<<g, GS_BLOCK, 0, st>>>(*d, (uint64_t *)dst, (const uint64_t *)src, n); break;
  }
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

static gs_status launch_convert(cudaStream_t st, const gs_ew_desc *d, gs_tensor *dst, const gs_tensor *src, int64_t n) {
  convert_kernel<<<gs_grid(n), GS_BLOCK, 0, st>>>(*d, gs_tensor_ptr(dst), (int)dst->dtype,
                                                  (int)gs_dtype_size(dst->dtype), gs_tensor_ptr(src),
                                                  (int)src->dtype, (int)gs_dtype_size(src->dtype), n);
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

static gs_status launch_fill(cudaStream_t st, const gs_ew_desc *d, size_t w, void *dst, uint64_t bits, int64_t n) {
  unsigned g = gs_grid(n);
  switch (w) {
  case 1: fill_kernel<uint8_t><<<g, GS_BLOCK, 0, st>>>(*d, (uint8_t *)dst, (uint8_t)bits, n); break;
  case 2: fill_kernel<uint16_t><<<g, GS_BLOCK, 0, st>>>(*d, (uint16_t *)dst, (uint16_t)bits, n); break;
  case 4: fill_kernel<uint32_t><<<g, GS_BLOCK, 0, st>>>(*d, (uint32_t *)dst, (uint32_t)bits, n); break;
  default: fill_kernel<uint64_t><<<g, GS_BLOCK, 0, st>>>(*d, (uint64_t *)dst, bits, n); break;
  }
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}

/* ---- entry points (gs_backend slots) ---- */

extern "C" gs_status gs_cuda_copy(gs_tensor *dst, const gs_tensor *src) {
  int64_t n = gs_numel(dst);
  if (n == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(dst, &st));
  const gs_tensor *ops[2] = {dst, src};
  gs_ew_desc d;
  gs_ew_build(&d, 2, ops);
  /* bool into uint8 is a byte move, as on the CPU */
  bool same = dst->dtype == src->dtype || (dst->dtype == GS_UINT8 && src->dtype == GS_BOOL);
  if (!same) return launch_convert(st, &d, dst, src, n);
  size_t w = gs_dtype_size(dst->dtype);
  if (gs_ew_dense(&d, 0) && gs_ew_dense(&d, 1)) {
    CUDA_CHECK(cudaMemcpyAsync(gs_tensor_ptr(dst), gs_tensor_ptr(src), (size_t)n * w, cudaMemcpyDeviceToDevice, st));
    return GS_OK;
  }
  return launch_move(st, &d, w, gs_tensor_ptr(dst), gs_tensor_ptr(src), n);
}

extern "C" gs_status gs_cuda_fill(gs_tensor *dst, gs_scalar value) {
  int64_t n = gs_numel(dst);
  if (n == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(dst, &st));
  uint64_t bits = 0; /* the value stored in dst's dtype, by the host's rules */
  if (value.is_float) gs_store_f64(dst->dtype, &bits, value.f);
  else gs_store_i64(dst->dtype, &bits, value.i);
  size_t w = gs_dtype_size(dst->dtype);
  const gs_tensor *ops[1] = {dst};
  gs_ew_desc d;
  gs_ew_build(&d, 1, ops);
  if (gs_ew_dense(&d, 0) && (w == 1 || bits == 0)) {
    CUDA_CHECK(cudaMemsetAsync(gs_tensor_ptr(dst), (int)(bits & 0xff), (size_t)n * w, st));
    return GS_OK;
  }
  return launch_fill(st, &d, w, gs_tensor_ptr(dst), bits, n);
}

extern "C" gs_status gs_cuda_arange(gs_tensor *dst, double start, double step) {
  int64_t n = gs_numel(dst);
  if (n == 0) return GS_OK;
  cudaStream_t st;
  GS_TRY(gs_stream_of(dst, &st));
  bool is_int = !gs_dtype_is_float(dst->dtype);
  /* the same guards as the CPU: integral start and step count exactly */
  int64_t istart = gs_f64_to_i64(start), istep = gs_f64_to_i64(step);
  bool exact_int = is_int && (double)istart == start && (double)istep == step;
  arange_kernel<<<gs_grid(n), GS_BLOCK, 0, st>>>(gs_tensor_ptr(dst), (int)dst->dtype, (int)gs_dtype_size(dst->dtype),
                                                 start, step, istart, istep, exact_int, n);
  CUDA_CHECK_LAUNCH();
  return GS_OK;
}
