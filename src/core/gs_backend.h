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
  /* optional, for devices that queue work asynchronously (gs_stream.h):
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

  /* optional: the backend's own collective library (gs_collectives.h) */
  const gs_collectives *collectives;
} gs_backend;


#endif
