/* backend_cpu.c: the CPU backend's table: host memory from the caching
 * allocator, kernels from cpu_*.c.
 *
 * The kernel slots go through thin wrappers that report each kernel to
 * the profiler (gs_prof.h) as an event on the host lane. With no profile
 * recording a wrapper is one relaxed atomic load and a tail call, so the
 * tiny-op cost does not move; the simulated GPUs call the gs_cpu_*
 * kernels directly and report their own events. */
#include <string.h>
#include "backend/cpu/backend_cpu.h"
#include "core/gs_alloc_host.h"
#include "core/gs_op_names.h"
#include "core/gs_prof.h"

static void *cpu_alloc(int i, size_t n) { return gs_host_alloc(n); }
static void cpu_free(int i, void *p, size_t n) { gs_host_free(p, n); }
static void cpu_empty_cache(int i) {
  gs_host_empty_cache();
  gs_cpu_wino_release_cache(); /* Winograd scratch (branch wino) */
}
static void cpu_mem_stats(int i, gs_mem_stats *s) {
  memset(s, 0, sizeof *s);
  s->allocated = gs_host_bytes_in_use();
  s->reserved = s->allocated + gs_host_bytes_cached();
}
static gs_status cpu_sync(int i) { return GS_OK; }

/* ---- profiling -------------------------------------------------------------- */

/* The bytes a kernel moves for operand t: its elements as the kernel
 * sees them (a broadcast operand at the output's size), as the simulated
 * devices count them (gs_task_tensor), so a cpu row and a cuda row of the
 * same op agree. */
static uint64_t touched(const gs_tensor *t) {
  return t ? (uint64_t)gs_numel(t) * gs_dtype_size(t->dtype) : 0;
}

static bool on_host(const gs_tensor *t) { return t == NULL || gs_tensor_device(t).type == GS_CPU; }

/* Reports one kernel of the host lane that ran from t0 to now. Only
 * kernels on cpu tensors count: a copy between the cpu and a simulated
 * GPU also runs the cpu copy kernel, and the device reports it itself. */
static void prof_kernel(const char *name, uint64_t t0, const gs_tensor *out, const gs_tensor *out2,
                        const gs_tensor *a, const gs_tensor *b, uint64_t flops) {
  uint64_t t1 = gs_prof_clock_ns();
  if (!on_host(out) || !on_host(out2) || !on_host(a) || !on_host(b)) return;
  gs_prof_event e;
  memset(&e, 0, sizeof e);
  e.name = name;
  e.kind = GS_PROF_KERNEL;
  e.device_type = GS_CPU;
  e.device_index = -1;
  e.stream = -1;
  e.t0_ns = t0;
  e.t1_ns = t1;
  e.bytes = touched(out) + touched(out2) + touched(a) + touched(b);
  e.flops = flops;
  /* PyTorch's "Input Shapes": the operands read; a kernel that reads
   * none (fill, arange, random) lists the tensor it writes */
  if (gs_prof_shapes_on()) {
    char text[GS_PROF_SHAPES_LEN] = "";
    if (a) gs_prof_add_shape(text, a->ndim, a->shape);
    if (b) gs_prof_add_shape(text, b->ndim, b->shape);
    if (!a && !b) gs_prof_add_shape(text, out->ndim, out->shape);
    gs_prof_record_shaped(&e, text);
    return;
  }
  gs_prof_record(&e);
}

/* The recording half of each slot stays out of line, so that the slot
 * itself is a load, a branch and a tail call (no stack frame) while no
 * profile records. */
#define NOINLINE __attribute__((noinline))

/* FLOPs as the simulated devices count them (backend_sim.c): one per
 * output element of an elementwise op, one per input element of a
 * reduction, five per element of a softmax, 2*M*N*K for a product. */
static uint64_t elems(const gs_tensor *t) { return (uint64_t)gs_numel(t); }

static NOINLINE gs_status record_copy(gs_tensor *dst, const gs_tensor *src) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_copy(dst, src);
  prof_kernel("copy_", t0, dst, NULL, src, NULL, 0);
  return s;
}
static gs_status prof_copy(gs_tensor *dst, const gs_tensor *src) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_copy(dst, src);
  return record_copy(dst, src);
}

static NOINLINE gs_status record_fill(gs_tensor *dst, gs_scalar value) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_fill(dst, value);
  prof_kernel("fill_", t0, dst, NULL, NULL, NULL, 0);
  return s;
}
static gs_status prof_fill(gs_tensor *dst, gs_scalar value) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_fill(dst, value);
  return record_fill(dst, value);
}

static NOINLINE gs_status record_unary(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_unary(op, out, x, args);
  prof_kernel(gs_unary_name(op), t0, out, NULL, x, NULL, elems(out));
  return s;
}
static gs_status prof_unary(gs_unary_op op, gs_tensor *out, const gs_tensor *x, const double *args) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_unary(op, out, x, args);
  return record_unary(op, out, x, args);
}

static NOINLINE gs_status record_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_binary(op, out, a, b);
  prof_kernel(gs_binary_name(op), t0, out, NULL, a, b, elems(out));
  return s;
}
static gs_status prof_binary(gs_binary_op op, gs_tensor *out, const gs_tensor *a, const gs_tensor *b) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_binary(op, out, a, b);
  return record_binary(op, out, a, b);
}

static NOINLINE gs_status record_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_reduce(op, out, idx, x, dim);
  prof_kernel(gs_reduce_name(op), t0, out, idx, x, NULL, elems(x));
  return s;
}
static gs_status prof_reduce(gs_reduce_op op, gs_tensor *out, gs_tensor *idx, const gs_tensor *x, int dim) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_reduce(op, out, idx, x, dim);
  return record_reduce(op, out, idx, x, dim);
}

static NOINLINE gs_status record_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_softmax(out, x, dim, log);
  prof_kernel(log ? "log_softmax" : "softmax", t0, out, NULL, x, NULL, 5 * elems(x));
  return s;
}
static gs_status prof_softmax(gs_tensor *out, const gs_tensor *x, int dim, bool log) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_softmax(out, x, dim, log);
  return record_softmax(out, x, dim, log);
}

/* c [B, M, N] = a [B, M, K] @ b [B, K, N]: 2*B*M*N*K flops ("mm", as the
 * simulated devices name their matrix products). */
static NOINLINE gs_status record_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_gemm(c, a, b);
  uint64_t flops = 2 * elems(c) * (uint64_t)a->shape[2];
  prof_kernel("mm", t0, c, NULL, a, b, flops);
  return s;
}
static gs_status prof_gemm(gs_tensor *c, const gs_tensor *a, const gs_tensor *b) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_gemm(c, a, b);
  return record_gemm(c, a, b);
}

static NOINLINE gs_status record_arange(gs_tensor *dst, double start, double step) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_arange(dst, start, step);
  prof_kernel("arange", t0, dst, NULL, NULL, NULL, 2 * elems(dst)); /* start + i * step */
  return s;
}
static gs_status prof_arange(gs_tensor *dst, double start, double step) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_arange(dst, start, step);
  return record_arange(dst, start, step);
}

static NOINLINE gs_status record_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_random(dst, r, seed, offset);
  prof_kernel(r->kind == GS_RAND_UNIFORM ? "uniform" : r->kind == GS_RAND_NORMAL ? "normal" : "randint", t0, dst,
              NULL, NULL, NULL, (r->kind == GS_RAND_NORMAL ? 4 : 1) * elems(dst)); /* as backend_sim.c counts */
  return s;
}
static gs_status prof_random(gs_tensor *dst, const gs_random_spec *r, uint64_t seed, uint64_t offset) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_random(dst, r, seed, offset);
  return record_random(dst, r, seed, offset);
}

static NOINLINE gs_status record_index_select(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_index_select(out, x, dim, idx);
  prof_kernel("index_select", t0, out, NULL, out, idx, 0); /* reads out's worth of x, not all of x */
  return s;
}
static gs_status prof_index_select(gs_tensor *out, const gs_tensor *x, int dim, const gs_tensor *idx) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_index_select(out, x, dim, idx);
  return record_index_select(out, x, dim, idx);
}

/* convolution (conv2d): im2col moves data (no flops); col2im adds each column element into x */
static NOINLINE gs_status record_im2col(gs_tensor *col, const gs_tensor *x, const gs_conv_geom *g) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_im2col(col, x, g);
  prof_kernel("im2col", t0, col, NULL, x, NULL, 0);
  return s;
}
static gs_status prof_im2col(gs_tensor *col, const gs_tensor *x, const gs_conv_geom *g) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_im2col(col, x, g);
  return record_im2col(col, x, g);
}
static NOINLINE gs_status record_col2im(gs_tensor *x, const gs_tensor *col, const gs_conv_geom *g) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_col2im(x, col, g);
  prof_kernel("col2im", t0, x, NULL, col, NULL, elems(col));
  return s;
}
static gs_status prof_col2im(gs_tensor *x, const gs_tensor *col, const gs_conv_geom *g) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_col2im(x, col, g);
  return record_col2im(x, col, g);
}

/* ---- Winograd F(2x2, 3x3) convolutions (branch wino). FLOPs: those of
 * the direct convolution it stands for (2 * outputs * Ci * 9), so rates
 * compare with im2col's products. ---- */
static NOINLINE gs_status record_wino(gs_tensor *y, const gs_tensor *x, const gs_tensor *w, const gs_tensor *b,
                                      int64_t ph, int64_t pw, bool flip) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_conv3x3_wino(y, x, w, b, ph, pw, flip);
  prof_kernel("conv3x3_winograd", t0, y, NULL, x, w, 18 * elems(y) * (uint64_t)x->shape[1]);
  return s;
}
static gs_status prof_wino(gs_tensor *y, const gs_tensor *x, const gs_tensor *w, const gs_tensor *b, int64_t ph,
                           int64_t pw, bool flip) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_conv3x3_wino(y, x, w, b, ph, pw, flip);
  return record_wino(y, x, w, b, ph, pw, flip);
}
static NOINLINE gs_status record_wino_gw(gs_tensor *gw, const gs_tensor *x, const gs_tensor *gy, int64_t ph,
                                         int64_t pw) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_conv3x3_wino_gw(gw, x, gy, ph, pw);
  prof_kernel("conv3x3_winograd_gw", t0, gw, NULL, x, gy, 18 * elems(gy) * (uint64_t)x->shape[1]);
  return s;
}
static gs_status prof_wino_gw(gs_tensor *gw, const gs_tensor *x, const gs_tensor *gy, int64_t ph, int64_t pw) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_conv3x3_wino_gw(gw, x, gy, ph, pw);
  return record_wino_gw(gw, x, gy, ph, pw);
}

/* ---- issue 20: pooling, batch norm, resizing. FLOPs: one per input
 * element read (pooling, resizing), as the simulated devices count them
 * (backend_sim.c). ---- */

static const char *pool_kernel_name(const gs_pool2d_params *p) {
  return p->kind == GS_POOL_MAX || p->kind == GS_POOL_ADAPTIVE_MAX ? "max_pool2d" : "avg_pool2d";
}
static NOINLINE gs_status record_pool2d(const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax,
                                        const gs_tensor *x) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_pool2d(p, out, argmax, x);
  prof_kernel(pool_kernel_name(p), t0, out, argmax, x, NULL, elems(x));
  return s;
}
static gs_status prof_pool2d(const gs_pool2d_params *p, gs_tensor *out, gs_tensor *argmax, const gs_tensor *x) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_pool2d(p, out, argmax, x);
  return record_pool2d(p, out, argmax, x);
}
static NOINLINE gs_status record_pool2d_backward(const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                                                 const gs_tensor *argmax) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_pool2d_backward(p, gx, gy, argmax);
  prof_kernel("pool2d_backward", t0, gx, NULL, gy, argmax, elems(gx));
  return s;
}
static gs_status prof_pool2d_backward(const gs_pool2d_params *p, gs_tensor *gx, const gs_tensor *gy,
                                      const gs_tensor *argmax) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_pool2d_backward(p, gx, gy, argmax);
  return record_pool2d_backward(p, gx, gy, argmax);
}
static NOINLINE gs_status record_bn_stats(gs_tensor *stats, const gs_tensor *x) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_bn_stats(stats, x);
  prof_kernel("batch_norm_stats", t0, stats, NULL, x, NULL, 3 * elems(x));
  return s;
}
static gs_status prof_bn_stats(gs_tensor *stats, const gs_tensor *x) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_bn_stats(stats, x);
  return record_bn_stats(stats, x);
}
static NOINLINE gs_status record_bn_reduce(gs_tensor *sums, const gs_tensor *gy, const gs_tensor *x,
                                           const gs_tensor *mean) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_bn_reduce(sums, gy, x, mean);
  prof_kernel("batch_norm_backward_reduce", t0, sums, NULL, gy, x, 3 * elems(x));
  return s;
}
static gs_status prof_bn_reduce(gs_tensor *sums, const gs_tensor *gy, const gs_tensor *x, const gs_tensor *mean) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_bn_reduce(sums, gy, x, mean);
  return record_bn_reduce(sums, gy, x, mean);
}
static NOINLINE gs_status record_bn_elemt(gs_tensor *out, const gs_tensor *a, const gs_tensor *x, const gs_tensor *k) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_bn_elemt(out, a, x, k);
  prof_kernel(a ? "batch_norm_backward_elemt" : "batch_norm_elemt", t0, out, NULL, x, a, 4 * elems(x));
  return s;
}
static gs_status prof_bn_elemt(gs_tensor *out, const gs_tensor *a, const gs_tensor *x, const gs_tensor *k) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_bn_elemt(out, a, x, k);
  return record_bn_elemt(out, a, x, k);
}
static NOINLINE gs_status record_resize(const gs_resize_params *p, gs_tensor *out, const gs_tensor *x) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_resize(p, out, x);
  prof_kernel(p->mode == GS_RESIZE_NEAREST ? "upsample_nearest2d" : "upsample_bilinear2d", t0, out, NULL, x, NULL,
              4 * elems(out));
  return s;
}
static gs_status prof_resize(const gs_resize_params *p, gs_tensor *out, const gs_tensor *x) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_resize(p, out, x);
  return record_resize(p, out, x);
}
static NOINLINE gs_status record_resize_backward(const gs_resize_params *p, gs_tensor *gx, const gs_tensor *gy) {
  uint64_t t0 = gs_prof_clock_ns();
  gs_status s = gs_cpu_resize_backward(p, gx, gy);
  prof_kernel(p->mode == GS_RESIZE_NEAREST ? "upsample_nearest2d_backward" : "upsample_bilinear2d_backward", t0, gx,
              NULL, gy, NULL, 4 * elems(gy));
  return s;
}
static gs_status prof_resize_backward(const gs_resize_params *p, gs_tensor *gx, const gs_tensor *gy) {
  if (__builtin_expect(!gs_prof_on(), 1)) return gs_cpu_resize_backward(p, gx, gy);
  return record_resize_backward(p, gx, gy);
}

const gs_backend gs_backend_cpu = {
  .name = "cpu", .host_memory = true,
  .alloc = cpu_alloc, .free = cpu_free, .empty_cache = cpu_empty_cache, .mem_stats = cpu_mem_stats,
  .synchronize = cpu_sync,
  .copy = prof_copy, .fill = prof_fill, .unary = prof_unary, .binary = prof_binary,
  .reduce = prof_reduce, .softmax = prof_softmax, .gemm = prof_gemm,
  .arange = prof_arange, .random = prof_random, .index_select = prof_index_select, .index_add = gs_cpu_index_add,
  .check_index = gs_cpu_check_index,
  /* convolution (conv2d) */
  .im2col = prof_im2col, .col2im = prof_col2im,
  /* Winograd F(2x2, 3x3) (branch wino) */
  .conv3x3_wino = prof_wino, .conv3x3_wino_gw = prof_wino_gw,
  /* issue 20: pooling, batch norm, resizing */
  .pool2d = prof_pool2d, .pool2d_backward = prof_pool2d_backward,
  .bn_stats = prof_bn_stats, .bn_reduce = prof_bn_reduce, .bn_elemt = prof_bn_elemt,
  .resize = prof_resize, .resize_backward = prof_resize_backward,
};
