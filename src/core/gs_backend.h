/* gs_backend.h: one table of function pointers per backend (cpu, sim,
 * cuda). The op layer (gs_op_*.c) validates everything first -- shapes,
 * dtypes, devices, bounds -- so backends only compute. A backend that
 * lacks an op leaves its slot NULL and the user gets an error naming the
 * op and the device.
 *
 * Conventions for kernel slots: tensors all live on the backend's device;
 * inputs are already in the op's compute dtype (gs_compute_dtype) unless
 * the slot says otherwise; shapes already broadcast (inputs carry stride 0
 * where they were expanded); outputs are freshly allocated and contiguous
 * unless the slot says otherwise. Every slot returns GS_OK or a gs_error. */
#ifndef GS_BACKEND_H
#define GS_BACKEND_H

#include "core/gs_collectives.h"
#include "core/gs_op_list.h"
#include "core/gs_streams.h"
#include "core/gs_tensor.h"

/* A Lua number or boolean as an op argument; its kind decides promotion
 * (a bool stays bool, an integer int64, a float the default float). */
typedef struct { bool is_float; double f; int64_t i; bool is_bool; } gs_scalar;
static inline gs_scalar gs_scalar_f(double f) { gs_scalar s = {true, f, 0, false}; return s; }
static inline gs_scalar gs_scalar_i(int64_t i) { gs_scalar s = {false, (double)i, i, false}; return s; }
static inline gs_scalar gs_scalar_b(bool b) { gs_scalar s = {false, b ? 1.0 : 0.0, b, true}; return s; }

/* The op families and their tables come from one list each (gs_op_list.h). */
typedef enum { GS_UNARY_OPS(GS_OP_ENUM_U) GS_U_COUNT } gs_unary_op;
typedef enum { GS_BINARY_OPS(GS_OP_ENUM_B) GS_B_COUNT } gs_binary_op;
typedef enum { GS_REDUCE_OPS(GS_OP_ENUM_R) GS_R_COUNT } gs_reduce_op;

typedef enum { GS_RAND_UNIFORM, GS_RAND_NORMAL, GS_RAND_INT } gs_random_kind;
/* A draw: UNIFORM in [a, b), NORMAL with mean a and std b, INT in
 * [lo, hi) with lo < hi, exact over all of int64 (gs_philox_randint). */
typedef struct { gs_random_kind kind; double a, b; int64_t lo, hi; } gs_random_spec;

/* ---- convolution (conv2d) ---- */
/* A 2-d convolution's geometry as the im2col/col2im slots read it: kernel
 * (kh, kw), stride, padding before the first row and column, dilation,
 * and the output size (oh, ow). The padding after the last row or column
 * is not stored: only the output size shows it (PyTorch's 'same' pads one
 * more after than before when the total is odd). */
typedef struct { int64_t kh, kw, sh, sw, ph, pw, dh, dw, oh, ow; } gs_conv_geom;
/* ---- pooling, batch norm and resizing (issue 20, branch pool) ---- */
typedef enum { GS_POOL_MAX, GS_POOL_AVG, GS_POOL_ADAPTIVE_MAX, GS_POOL_ADAPTIVE_AVG } gs_pool_kind;
/* A 2-d pooling of `planes` (N*C) contiguous h x w planes into oh x ow.
 * MAX: output (i, j) is the largest of the cells (i*sh - ph + a*dh,
 * j*sw - pw + b*dw), a < kh, b < kw, that lie inside the plane (padding
 * never wins); ties keep the first cell in row-major order, a NaN wins.
 * AVG: the mean of the window (dh = dw = 1), whose divisor counts the
 * padding when count_include_pad (but not cells past h + ph, which
 * ceil_mode can reach), else the cells inside the plane.
 * ADAPTIVE_*: rows floor(i*h/oh) to ceil((i+1)*h/oh) - 1 (columns alike),
 * the k/s/p/d fields unused. */
typedef struct {
  int kind; /* gs_pool_kind */
  bool count_include_pad;
  int64_t planes, h, w, oh, ow;
  int kh, kw, sh, sw, ph, pw, dh, dw;
} gs_pool2d_params;

typedef enum { GS_RESIZE_NEAREST, GS_RESIZE_BILINEAR } gs_resize_mode;
/* Resizing `planes` contiguous h x w planes to oh x ow. scale_h/scale_w
 * are the user's scale_factor, 0 when a size was given. The source step
 * per output pixel is then, as PyTorch computes it in the element type
 * (float for NEAREST), 1/scale_factor or h/oh, or (h-1)/(oh-1) (0 when
 * oh = 1) with align_corners. NEAREST: source row min(floor(i*step), h-1)
 * (row i itself when oh = h, i/2 when oh = 2h). BILINEAR: source position
 * i*step (align_corners) or max((i+0.5)*step - 0.5, 0), blended between
 * its floor row and the next (clamped to h-1); columns alike. */
typedef struct {
  int mode; /* gs_resize_mode */
  bool align_corners;
  int64_t planes, h, w, oh, ow;
  double scale_h, scale_w;
} gs_resize_params;

/* A device's memory figures (PyTorch's names: reserved = allocated +
 * cached, the max_ fields are peaks since reset_peak). A backend whose
 * allocator also counts events sets has_counters and the fields after it
 * (the rest of torch.cuda.memory_stats()). */
typedef struct {
  size_t allocated, max_allocated, reserved, max_reserved, total, free;
  bool has_counters;
  uint64_t n_alloc, n_free, n_cache_hits, n_alloc_retries, n_ooms, kernels, busy_ns;
} gs_mem_stats;

/* torch.cuda.get_device_properties(i). */
typedef struct {
  char name[256];
  size_t total_memory;
  int major, minor, multi_processor_count;
  bool simulated;
} gs_device_props;

typedef struct gs_backend {
  const char *name; /* "cpu", "sim", "cuda" */
  /* optional, device families with a count (cuda, sim): how many devices
   * exist (for real GPUs the first call loads the driver), and, when none
   * does, why not ("" or NULL when unknown) */
  int (*device_count)(void);
  const char *(*unavailable_reason)(void);
  /* optional (sim): (re)creates n devices capped at cap bytes each */
  void (*configure)(int n, size_t cap);
  /* optional (sim): the modelled cost of creating a device's context, in
   * ms (GSHELL_SIM_CONTEXT_MS), 0 when off */
  int (*context_ms)(void);
  /* The device's memory is host memory (cpu, sim): the CPU kernels read
   * and write it, so copies between two such memories run gs_cpu_copy
   * directly, without the memcpy slots or staging buffers. */
  bool host_memory;
  /* optional (NULL on the cpu): name, memory size, compute capability */
  gs_status (*properties)(int index, gs_device_props *out);
  /* optional: the GPU model (core/gs_gpu_model.h) the device's time
   * follows; NULL, or a NULL slot, when it keeps real time (simulated GPUs
   * on the "host" model, real GPUs, the cpu) */
  const struct gs_gpu_model *(*gpu_model)(int index);
  /* optional (sim; the kernel lab, issue 30): queues on device `index`'s
   * current stream a task standing for a kernel the host has already run
   * on the device's memory (a Lua kernel): it computes nothing, takes
   * `seconds` of modelled time, shows in the profiler as `name` (a string
   * that outlives the task) bound by `bound` (a gs_prof_bound), and counts
   * as a use of the n tensors (the written ones first). A backend with
   * this slot keeps its devices' memory in host memory (even the staged
   * variant): the host reads and writes it after gs_tensor_host_wait */
  gs_status (*host_ran)(int index, const char *name, double seconds, int bound, const gs_tensor *const *xs, int n);
  /* optional: percent of wall time the device ran kernels since the
   * previous call; NULL when the backend cannot tell */
  int (*utilization)(int index);

  /* memory: alloc returns NULL when it cannot allocate (no message) */
  void *(*alloc)(int index, size_t nbytes);
  /* optional: after a failed alloc, NULL when the device was out of memory,
   * else what went wrong (a broken context, no driver), so the user is not
   * told "out of memory" for an unrelated failure */
  const char *(*alloc_failure)(int index);
  void (*free)(int index, void *ptr, size_t nbytes);
  /* optional: counts one out-of-memory failure (num_ooms). Called once per
   * failed allocation, after the engine's collect-and-retry, so the retry
   * does not count the same failure twice */
  void (*count_oom)(int index);
  void (*empty_cache)(int index);
  void (*mem_stats)(int index, gs_mem_stats *out);
  /* mem_stats's `allocated` read from the caching pool alone: no driver
   * call, any index below GS_MAX_CUDA_DEVICES, and 0 for a device never
   * started. The Lua collector adds it up at every full collection, which
   * must not create a CUDA context on each GPU of a CPU-only session. */
  size_t (*pool_allocated)(int index);
  void (*reset_peak)(int index);
  /* raw byte copies between this device and the host or another device
   * of the same backend (when d2d is NULL the engine bounces through the
   * host; the CUDA backend's d2d handles missing peer access itself) */
  gs_status (*memcpy_h2d)(int index, void *dst, const void *src, size_t n);
  gs_status (*memcpy_d2h)(int index, void *dst, const void *src, size_t n);
  gs_status (*memcpy_d2d)(int dst_index, void *dst, int src_index, const void *src, size_t n);
  gs_status (*synchronize)(int index);
  /* optional, for devices that queue work asynchronously (the simulated
   * GPUs' backend/sim/sim_queue.h): the "who still uses this buffer"
   * bookkeeping (gs_buffer.stream, uses, qid):
   * adopt sets up a new buffer (its stream); release gives a freed
   * buffer's memory back instead of free, once no queued work needs it;
   * host_wait returns when the host may read or write the buffer's memory
   * (`what` names the synchronising call for set_sync_debug_mode);
   * copy_queued moves data between host memories when this device is one
   * end (non_blocking: may return before the copy ran, PyTorch's rule). */
  void (*adopt)(gs_buffer *b);
  void (*release)(gs_buffer *b);
  gs_status (*host_wait)(gs_buffer *b, const char *what);
  gs_status (*copy_queued)(gs_tensor *dst, const gs_tensor *src, bool non_blocking);

  /* kernels */
  /* dst[i] = convert(src[i]): any dtypes, any strides, same shape (src may
   * carry broadcast strides); dst may be a strided view. */
  gs_status (*copy)(gs_tensor *dst, const gs_tensor *src);
  /* dst (any dtype, any strides) = value */
  gs_status (*fill)(gs_tensor *dst, gs_scalar value);
  /* out = op(x); x and out in the same compute dtype, except LOGICAL_NOT
   * (bool out). args: CLAMP's min and max. out may alias x (in place). */
  gs_status (*unary)(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args);
  /* out = a op b; a and b share a compute dtype; out has it too, or bool for
   * comparisons and logic. out may alias a (in place, a contiguous). */
  gs_status (*binary)(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b);
  /* x contiguous, viewed as [outer, x->shape[dim], inner]; dim < 0 reduces
   * everything into a 0-d out. out has x's dtype (int64 for ARG*), idx
   * (may be NULL) receives 0-based int64 positions for MAX/MIN. */
  gs_status (*reduce)(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim);
  /* out = (log_)softmax of contiguous float x along dim */
  gs_status (*softmax)(gs_tensor *out, const gs_tensor *x, int dim, bool log);
  /* c[b] = a[b] @ b[b] for 3-d a [B,M,K], b [B,K,N], c [B,M,N] contiguous;
   * a and b may be strided (transposed, batch stride 0 for broadcast). */
  gs_status (*gemm)(gs_tensor *c, const gs_tensor *a, const gs_tensor *b);
  /* dst contiguous: dst[i] = start + i * step */
  gs_status (*arange)(gs_tensor *dst, double start, double step);
  /* dst contiguous float32/float64 (int64 for GS_RAND_INT): Philox stream
   * (seed, offset) so every device draws the same numbers. */
  gs_status (*random)(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset);
  /* out = x.index_select(dim, idx) with idx int64 0-based, checked: an
   * index out of range is reported at once (cpu) or recorded in the
   * device's error record and reported at the next synchronisation
   * (gs_devflag.h), the output then undefined */
  gs_status (*index_select)(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx);
  /* every element of idx (int64, 1-d, any stride) is in [0, size), or the
   * error `code` (a gs_devflag_code naming the op) is reported, as above */
  gs_status (*check_index)(const gs_tensor *idx, int64_t size, int code);
  /* index_select's backward (issue 31): out [outer, size, inner] (zeros,
   * contiguous, float32 or float64) gets out[:, idx[j], :] += src[:, j, :]
   * for src [outer, nidx, inner] contiguous of out's dtype; idx int64 1-d
   * (any stride), already checked to lie in [0, size). Repeated indices
   * add up. Optional: gs_index_add uses a one-hot product without it. */
  gs_status (*index_add)(gs_tensor *out, int dim, const gs_tensor *idx, const gs_tensor *src);
  /* ---- convolution (conv2d; gs_op_conv.c), float32/float64 ---- */
  /* col [C*kh*kw, N, oh*ow] = the patches of x [N, C, H, W] (both
   * contiguous): col[(c*kh + i)*kw + j, n, y*ow + x] =
   *   x[n, c, y*sh - ph + i*dh, x*sw - pw + j*dw], 0 where that is outside x.
   * Rows are (channel, kernel row, kernel column), columns (sample, output
   * pixel), so one matrix product covers the whole batch. */
  gs_status (*im2col)(gs_tensor *col, const gs_tensor *x, const gs_conv_geom *g);
  /* im2col's adjoint: every element of x [N, C, H, W] (contiguous) is
   * written, the sum of the col entries im2col would copy from it (0 when
   * none), added in row order so every device gives the same sums; no
   * atomics. */
  gs_status (*col2im)(gs_tensor *x, const gs_tensor *col, const gs_conv_geom *g);
  /* ---- Winograd F(2x2, 3x3) fast path (branch wino; optional, NULL:
   * the op layer uses im2col). float32, all tensors contiguous, 3x3
   * kernel, stride 1, dilation 1, no groups. ---- */
  /* y [N, Co, oh, ow] = the convolution of x [N, Ci, H, W]: y[n, o, p, q] =
   * b[o] + sum over i, a, c of x[n, i, p - ph + a, q - pw + c] * k[o, i, a, c]
   * (0 outside x; ph, pw may be negative), b may be NULL; k = w [Co, Ci, 3, 3],
   * or with flip k[o, i, a, c] = w[i, o, 2 - a, 2 - c] for w [Ci, Co, 3, 3]
   * (the input gradient's kernel). */
  gs_status (*conv3x3_wino)(gs_tensor *y, const gs_tensor *x, const gs_tensor *w, const gs_tensor *b, int64_t ph,
                            int64_t pw, bool flip);
  /* gw [Co, Ci, 3, 3] = the weight gradient of that convolution (no flip)
   * for x [N, Ci, H, W] and gy [N, Co, oh, ow]; wholly written */
  gs_status (*conv3x3_wino_gw)(gs_tensor *gw, const gs_tensor *x, const gs_tensor *gy, int64_t ph, int64_t pw);
  /* ---- end of the Winograd slots ---- */

  /* ---- pooling, batch norm and resizing (issue 20, branch pool): x, gy
   * contiguous float32/float64; outputs contiguous and wholly written.
   * Deterministic on every backend (no atomics: gradients gather). ---- */
  /* out [planes, oh, ow] = pool of x [planes, h, w] (gs_pool2d_params);
   * argmax (int64, same shape, MAX kinds only, else NULL) receives the
   * winning cell's index in its plane (row * w + col), PyTorch's indices */
  gs_status (*pool2d)(const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax, const gs_tensor *x);
  /* gx [planes, h, w] = the gradient of pool2d for gy [planes, oh, ow]:
   * MAX kinds route each gy to its argmax cell (summed where windows
   * overlap), AVG kinds spread it over the window by the same divisor */
  gs_status (*pool2d_backward)(const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                               const gs_tensor *argmax);
  /* x viewed as [N, C, S] (S = 1 for a 2-d x): stats [2, C] receives each
   * channel's mean and biased variance over N*S values, accumulated in
   * double in a fixed order */
  gs_status (*bn_stats)(gs_tensor *stats, const gs_tensor *x);
  /* sums [2, C] = per channel, sum(gy) and sum(gy * (x - mean[c])) over
   * N*S values (gy and x [N, C, S], mean [C]), in double, fixed order */
  gs_status (*bn_reduce)(gs_tensor *sums, const gs_tensor *gy, const gs_tensor *x, const gs_tensor *mean);
  /* out = k[0][c] * a + k[1][c] * (x - k[2][c]) + k[3][c] for out, a, x
   * [N, C, S] and k [4, C]; a may be NULL (its term left out): batch norm's
   * normalisation (forward) and its input gradient (backward) */
  gs_status (*bn_elemt)(gs_tensor *out, const gs_tensor *a, const gs_tensor *x, const gs_tensor *k);
  /* out [planes, oh, ow] = x [planes, h, w] resized (gs_resize_params) */
  gs_status (*resize)(const gs_resize_params *p, gs_tensor *out, const gs_tensor *x);
  /* gx [planes, h, w] = the gradient of resize for gy [planes, oh, ow] */
  gs_status (*resize_backward)(const gs_resize_params *p, gs_tensor *gx, const gs_tensor *gy);
  /* ---- end of issue 20's slots ---- */

  /* optional: the backend's own collective library (gs_collectives.h) */
  const gs_collectives *collectives;
  /* optional: the backend's own streams and events (gs_streams.h); NULL:
   * one stream per device, events stamped on the host after a device
   * synchronisation (the CUDA backend today: one CUDA stream per device,
   * backend_cuda.c) */
  const gs_streams *streams;
} gs_backend;


#endif
