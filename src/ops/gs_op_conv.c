/* gs_op_conv.c: 2-d convolution (and 1-d as a view of it), forward and
 * the three gradients, validated once here with PyTorch's messages and
 * then run with four backend slots: im2col, gemm, col2im and the
 * elementwise copy/add.
 *
 * The plan (N samples, C = G*Cg input channels, Cout = G*Cog outputs,
 * K = Cg*kh*kw, L = oh*ow):
 *   col [G*K, n, L]   = im2col(x[n0 : n0+n])     a chunk of the batch
 *   y[i] [Cout, L]    = w [Cout, K] @ col[:, i, :]  (no groups: one batched
 *                       product over the chunk's samples, written in place)
 *   y' [G, Cog, n*L]  = w [G, Cog, K] @ col, read back as [n, Cout, L]
 *                       (groups: one product per group, then one copy)
 * plus the bias. im2col over a chunk of samples at once, not one image at a
 * time, keeps the kernel calls few (LeNet's layers are small matrices). The
 * chunk is as many samples as fit the column cap (gs_conv_col_cap, 4 MiB),
 * so memory stays bounded whatever the batch -- and small: the columns
 * im2col writes are still in the cache when the product reads them. On
 * this 2-core host (busy) a 64 MiB cap ran ResNet's 3x3 64->64 layer at
 * 28x28 at 9 to 13 GFLOP/s forward and backward, 1 to 4 MiB at 75 to 79,
 * LeNet's layers 3 to 4 against 18 to 34. The gradients put a chunk's
 * samples side by side (gy' [G, Cog, n*L], one copy) for long products:
 *   gw [G, Cog, K]  += gy' @ col^T
 *   gcol [G, K, n*L] = w^T @ gy',  gx = col2im(gcol)
 *   gb              = gy summed over N, oh, ow
 * A 1x1 kernel with stride 1 and no padding needs no columns: x [N, C, L]
 * is already the column matrix of each sample, so forward and the input
 * gradient are one batched product each (the weight broadcast).
 * A float32 3x3 conv with stride 1, dilation 1 and no groups goes to the
 * backend's Winograd F(2x2, 3x3) slots when it has them (the cpu's
 * cpu_winograd.c; use_wino below): 4 multiply-adds per output and channel
 * pair instead of 9. The input gradient is that forward conv run on gy
 * with the kernel turned 180 degrees and its channels swapped, padding
 * 2 - pad; the weight gradient has a slot of its own. Mode 1 (auto) keeps
 * layers with few channels on im2col, where it was measured faster. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "core/gs_gpu_model.h"
#include "ops/gs_ops.h"

#define REL(t) gs_tensor_release(t)
#define CONV_DEFAULT_CAP ((size_t)4 << 20)
/* Mode 1's choice of the Winograd path (see use_wino): with few channels
 * the transforms cost more than the products they save (ResNet's first
 * layer, 1 -> 64 at 28x28: 2 ms by im2col, 22 by Winograd). */
#define WINO_AUTO(p) ((p)->C >= 16 && (p)->Cout >= 16)

static size_t col_cap = CONV_DEFAULT_CAP;

size_t gs_conv_col_cap(size_t cap) {
  size_t old = col_cap;
  if (cap) col_cap = cap;
  return old;
}

/* ---- validation --------------------------------------------------------- */

/* "[6, 1, 5, 5]" */
/* The problem in 4-d terms: x [N, C, H, W], w [Cout, Cg, kh, kw], the
 * geometry, groups, and whether the input had no batch dim. */
typedef struct {
  int64_t N, C, H, W, Cout, Cg, G;
  gs_conv_geom g;
  bool unbatched;
  int out_ndim;
  int64_t out_shape[4];
} conv_plan;

static const char *op_name(int nd) { return nd == 1 ? "conv1d" : "conv2d"; }

/* Checks everything PyTorch checks, in its order and with its words, and
 * fills the plan. x, w, b as the user gave them (b may be NULL). */
static gs_status plan_conv(const gs_tensor *x, const gs_tensor *w, const gs_tensor *b, const gs_conv_opts *o,
                           conv_plan *p) {
  int nd = o->nd;
  char xs[160], ws[160], bs[160];
  memset(p, 0, sizeof *p);
  if (nd != 1 && nd != 2) return gs_error("convolution: %d spatial dims are not supported (1 or 2)", nd);
  GS_TRY(gs_check_same_device(x, w));
  if (b) GS_TRY(gs_check_same_device(x, b));
  /* the input: batched (nd + 2 dims) or not (nd + 1) */
  if (x->ndim != nd + 1 && x->ndim != nd + 2) {
    gs_shape_str(x, xs, sizeof xs);
    return gs_error("Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s", nd + 1,
                    nd + 2, op_name(nd), xs);
  }
  p->unbatched = x->ndim == nd + 1;
  /* the shapes as the messages show them: the input with its batch dim */
  int xn = nd + 2;
  int64_t xsh[4];
  xsh[0] = p->unbatched ? 1 : x->shape[0];
  for (int i = 1; i < xn; i++) xsh[i] = x->shape[i - (p->unbatched ? 1 : 0)];
  gs_shape_str_n(xn, xsh, xs, sizeof xs);
  gs_shape_str(w, ws, sizeof ws);
  if (!gs_dtype_is_float(x->dtype) || (x->dtype != GS_FLOAT32 && x->dtype != GS_FLOAT64))
    return gs_error("%s: expected a float32 or float64 input, got %s", op_name(nd), gs_dtype_name(x->dtype));
  /* PyTorch's words: "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) ..." */
  if (w->dtype != x->dtype)
    return gs_error("Input type (torch.%sTensor) and weight type (torch.%sTensor) should be the same",
                    gs_dtype_torch_name(x->dtype), gs_dtype_torch_name(w->dtype));
  if (b && b->dtype != x->dtype)
    return gs_error("Input type (%s) and bias type (%s) should be the same", x->dtype == GS_FLOAT64 ? "double" : "float",
                    b->dtype == GS_FLOAT64 ? "double" : b->dtype == GS_FLOAT32 ? "float" : gs_dtype_name(b->dtype));
  for (int i = 0; i < nd; i++) {
    if (o->pad_mode == GS_CONV_PAD_EXPLICIT && o->padding[i] < 0) return gs_error("negative padding is not supported");
    if (o->stride[i] <= 0) return gs_error("non-positive stride is not supported");
    if (o->dilation[i] <= 0) return gs_error("non-positive dilation is not supported");
  }
  if (o->groups <= 0) return gs_error("non-positive groups is not supported");
  if (o->pad_mode == GS_CONV_PAD_SAME)
    for (int i = 0; i < nd; i++)
      if (o->stride[i] != 1) return gs_error("padding='same' is not supported for strided convolutions");
  if (w->ndim != xn) {
    if (w->ndim < 3) return gs_error("weight should have at least three dimensions");
    return gs_error("Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional input of "
                    "size %s instead", w->ndim, w->ndim, ws, xn, xs);
  }
  for (int i = 2; i < w->ndim; i++)
    if (w->shape[i] < 1)
      return gs_error("%s: the kernel size must be at least 1 in every dim, got weight of size %s", op_name(nd), ws);
  int64_t G = o->groups, Cout = w->shape[0], Cg = w->shape[1], C = xsh[1];
  if (Cout < G)
    return gs_error("Given groups=%lld, expected weight to be at least %lld at dimension 0, but got weight of size "
                    "%s instead", (long long)G, (long long)G, ws);
  if (Cout % G != 0)
    return gs_error("Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got weight of "
                    "size %s instead", (long long)G, (long long)G, ws);
  if (C != Cg * G)
    return gs_error("Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but got %lld "
                    "channels instead", (long long)G, ws, xs, (long long)(Cg * G), (long long)C);
  if (b && (b->ndim != 1 || b->shape[0] != Cout)) {
    gs_shape_str(b, bs, sizeof bs);
    return gs_error("Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but got bias "
                    "of size %s instead", ws, (long long)Cout, bs);
  }
  /* spatial dims, 2-d terms: a conv1d is a conv2d over a height of 1 */
  int64_t in[2] = {1, xsh[xn - 1]}, k[2] = {1, w->shape[xn - 1]}, s[2] = {1, o->stride[0]},
          d[2] = {1, o->dilation[0]}, pad_lo[2] = {0, 0}, pad_hi[2] = {0, 0};
  if (nd == 2) {
    in[0] = xsh[2]; k[0] = w->shape[2]; s[0] = o->stride[0]; s[1] = o->stride[1];
    d[0] = o->dilation[0]; d[1] = o->dilation[1];
  }
  /* Sizes come from user numbers (padding, dilation up to 2^63 - 1), so
   * every sum and product is checked: an overflow wrapped into a small,
   * wrong output before (issue 33). */
  int64_t padded[2], span[2], out[2];
  for (int i = 0; i < 2; i++) {
    int oi = nd == 2 ? i : 0; /* index into the user's per-dim options */
    bool over = __builtin_mul_overflow(d[i], k[i] - 1, &span[i]) || __builtin_add_overflow(span[i], 1, &span[i]);
    if (o->pad_mode == GS_CONV_PAD_EXPLICIT && i >= 2 - nd) pad_lo[i] = pad_hi[i] = o->padding[oi];
    else if (o->pad_mode == GS_CONV_PAD_SAME && !over) {
      /* PyTorch's split: half before, the odd one after */
      int64_t total = span[i] - 1;
      pad_lo[i] = total / 2;
      pad_hi[i] = total - pad_lo[i];
    }
    over = over || __builtin_add_overflow(in[i], pad_lo[i], &padded[i]) ||
           __builtin_add_overflow(padded[i], pad_hi[i], &padded[i]);
    if (over)
      return gs_error("%s: the sizes overflow: input size %lld, padding %lld and %lld, kernel size %lld, dilation %lld "
                      "in dimension %d (the padded input and the dilated kernel must fit in 64 bits)",
                      op_name(nd), (long long)in[i], (long long)pad_lo[i], (long long)pad_hi[i], (long long)k[i],
                      (long long)d[i], nd == 2 ? i : 0);
  }
  bool too_big = false;
  for (int i = 2 - nd; i < 2; i++) too_big |= padded[i] < span[i];
  if (too_big) {
    if (nd == 2)
      return gs_error("Calculated padded input size per channel: (%lld x %lld). Kernel size: (%lld x %lld). Kernel "
                      "size can't be greater than actual input size", (long long)padded[0], (long long)padded[1],
                      (long long)span[0], (long long)span[1]);
    return gs_error("Calculated padded input size per channel: (%lld). Kernel size: (%lld). Kernel size can't be "
                    "greater than actual input size", (long long)padded[1], (long long)span[1]);
  }
  for (int i = 0; i < 2; i++) out[i] = (padded[i] - span[i]) / s[i] + 1;
  /* the output and the column matrix (Cg*kh*kw rows of N*oh*ow) must be
   * countable: the kernels index them with 64-bit products */
  int64_t plane, cells, rows;
  if (__builtin_mul_overflow(out[0], out[1], &plane) || __builtin_mul_overflow(plane, xsh[0], &cells) ||
      __builtin_mul_overflow(cells, Cout > Cg * k[0] * k[1] ? Cout : Cg * k[0] * k[1], &rows))
    return gs_error("%s: the output of %lld x %lld positions per channel is too large to index in 64 bits", op_name(nd),
                    (long long)out[0], (long long)out[1]);
  p->N = xsh[0]; p->C = C; p->H = in[0]; p->W = in[1];
  p->Cout = Cout; p->Cg = Cg; p->G = G;
  p->g = (gs_conv_geom){k[0], k[1], s[0], s[1], pad_lo[0], pad_lo[1], d[0], d[1], out[0], out[1]};
  /* the output as the user sees it: [N,] Cout, [oh,] ow */
  int on = 0;
  if (!p->unbatched) p->out_shape[on++] = p->N;
  p->out_shape[on++] = Cout;
  if (nd == 2) p->out_shape[on++] = out[0];
  p->out_shape[on++] = out[1];
  p->out_ndim = on;
  return GS_OK;
}

/* ---- helpers ------------------------------------------------------------ */

/* A contiguous view [n0, n0 + n) of t's first dim, reshaped to `ndim`
 * dims of `shape` (t contiguous). NULL only when out of memory. */
static gs_tensor *rows_view(const gs_tensor *t, int64_t n0, int ndim, const int64_t *shape) {
  int64_t stride[GS_MAX_DIMS], per = 1;
  gs_contiguous_strides(ndim, shape, stride);
  for (int i = 1; i < t->ndim; i++) per *= t->shape[i];
  return gs_tensor_view_of(t, ndim, shape, stride, t->offset + n0 * per);
}

/* A view with explicit geometry over t's storage, offset counted from t's. */
static gs_tensor *view(const gs_tensor *t, int ndim, const int64_t *shape, const int64_t *stride, int64_t off) {
  return gs_tensor_view_of(t, ndim, shape, stride, t->offset + off);
}

static gs_status oom(const char *what) { return gs_error_code(GS_ERR_OOM, "out of memory in %s", what); }

/* x and w as contiguous 4-d tensors [N, C, H, W] and [Cout, Cg, kh, kw]. */
static gs_status as4d(const gs_tensor *x, const gs_tensor *w, const conv_plan *p, gs_tensor **x4, gs_tensor **w4) {
  int64_t xs[4] = {p->N, p->C, p->H, p->W}, ws[4] = {p->Cout, p->Cg, p->g.kh, p->g.kw};
  gs_tensor *xc = NULL, *wc = NULL;
  gs_status s = gs_contiguous(x, &xc);
  if (s == GS_OK) s = gs_contiguous(w, &wc);
  if (s == GS_OK) s = gs_view(xc, 4, xs, x4);
  if (s == GS_OK) s = gs_view(wc, 4, ws, w4);
  REL(xc); REL(wc);
  return s;
}

/* A GPU's memory has no cache to stay in, and it wants big products: its
 * chunks may take 16 times the cap (64 MiB by default). */
#define CONV_DEVICE_FACTOR 16

/* Samples per chunk: as many as keep the columns under the cap, at least 1. */
static int64_t chunk_samples(const gs_backend *be, const conv_plan *p, size_t es) {
  double per = (double)(p->G * p->Cg * p->g.kh * p->g.kw) * (double)(p->g.oh * p->g.ow) * (double)es;
  double cap = (double)col_cap * (be->host_memory ? 1 : CONV_DEVICE_FACTOR);
  int64_t n = per > 0 ? (int64_t)(cap / per) : p->N;
  if (n < 1) n = 1;
  if (n > p->N) n = p->N;
  return n;
}

static bool is_1x1(const conv_plan *p) {
  const gs_conv_geom *g = &p->g;
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 && p->G == 1;
}

/* ---- Winograd F(2x2, 3x3) fast path (branch wino) ---------------------- */

static atomic_int wino_mode = 1;
static atomic_llong wino_calls;

int gs_conv_winograd(int mode, int64_t *calls) {
  int old = mode >= 0 ? atomic_exchange(&wino_mode, mode > 2 ? 2 : mode) : atomic_load(&wino_mode);
  if (calls) *calls = (int64_t)atomic_load(&wino_calls);
  return old;
}

/* Whether this conv takes the backend's Winograd slots: a 3x3 kernel with
 * stride 1, dilation 1, no groups, float32, and (mode 1) a shape where it
 * was measured faster than im2col + GEMM on this host. */
static bool use_wino(const gs_backend *be, const conv_plan *p, gs_dtype dt) {
  const gs_conv_geom *g = &p->g;
  int mode = atomic_load(&wino_mode);
  if (mode == 0 || !be->conv3x3_wino || !be->conv3x3_wino_gw || dt != GS_FLOAT32) return false;
  if (g->kh != 3 || g->kw != 3 || g->sh != 1 || g->sw != 1 || g->dh != 1 || g->dw != 1 || p->G != 1) return false;
  /* its BLAS calls take one sample's tiles and the channels as 32-bit
   * sizes; a bigger plane (a huge padding) goes to im2col, whose products
   * are cut to fit */
  if ((g->oh / 2 + 1) * (g->ow / 2 + 1) > INT32_MAX / 2 || p->C > INT32_MAX || p->Cout > INT32_MAX) return false;
  if (mode == 2) return true;
  return WINO_AUTO(p);
}

static void wino_count(void) { atomic_fetch_add(&wino_calls, 1); }

/* ---- the time model's view (issue 29) ------------------------------------ */

/* A real GPU runs a convolution pass as one cuDNN implicit-GEMM kernel,
 * where this engine queues several (im2col, products, col2im, copies):
 * on a simulated GPU that models one, the kernels queued between
 * begin_fused and gs_gpu_fused_end are priced as cuDNN's (gs_gpu_fused).
 * Forward: [Cog, K] x [K, N*L] per group; the data gradient [K, Cog] x
 * [Cog, N*L]; the weight gradient [Cog, N*L] x [N*L, K]; each reads and
 * writes input, weight and output once. Other devices ignore it. */
static void begin_fused(gs_gpu_fused *f, const conv_plan *p, const gs_tensor *x, bool fwd, bool gx, bool gw) {
  gs_device d = gs_tensor_device(x);
  memset(f, 0, sizeof *f);
  if (d.type != GS_CUDA) return;
  double G = (double)p->G, Cog = (double)(p->Cout / p->G), K = (double)(p->Cg * p->g.kh * p->g.kw);
  double NL = (double)p->N * (double)p->g.oh * (double)p->g.ow, sz = (double)gs_dtype_size(x->dtype);
  double io = sz * ((double)p->N * (double)p->C * (double)p->H * (double)p->W + (double)p->Cout * K + NL * (double)p->Cout);
  double shapes[3][3] = {{Cog, NL, K}, {K, NL, Cog}, {Cog, K, NL}}; /* forward, data, weight: M, N, K */
  bool want[3] = {fwd, !fwd && gx, !fwd && gw};
  f->name = fwd ? "conv2d" : "conv2d_backward";
  f->dev = d.index;
  f->dtype = x->dtype;
  for (int i = 0; i < 3; i++) {
    if (!want[i]) continue;
    int k = f->passes++;
    f->M[k] = shapes[i][0], f->N[k] = shapes[i][1], f->K[k] = shapes[i][2], f->batch[k] = G, f->bytes[k] = io;
  }
  gs_gpu_fused_begin(f);
}

/* ---- forward ------------------------------------------------------------ */

/* y [N, Cout, oh, ow] = conv(x4, w4) (+ b), all contiguous. */
static gs_status forward4(const gs_backend *be, const gs_tensor *x4, const gs_tensor *w4, const gs_tensor *b,
                          const conv_plan *p, gs_tensor *y) {
  int64_t N = p->N, G = p->G, Cout = p->Cout, Cog = Cout / G, K = p->Cg * p->g.kh * p->g.kw,
          L = p->g.oh * p->g.ow;
  gs_status s = GS_OK;
  gs_tensor *bias = NULL; /* b viewed [n, Cout, L] with strides (0, 1, 0), made per chunk size */
  gs_tensor *col = NULL, *tmp = NULL;
  if (is_1x1(p)) {
    /* y[n] [Cout, L] = w [Cout, C] @ x[n] [C, L], the weight broadcast */
    int64_t ash[3] = {N, Cout, p->C}, ast[3] = {0, p->C, 1}, xs3[3] = {N, p->C, L}, ys3[3] = {N, Cout, L};
    gs_tensor *a = view(w4, 3, ash, ast, 0), *xb = rows_view(x4, 0, 3, xs3), *yb = rows_view(y, 0, 3, ys3);
    if (!a || !xb || !yb) s = oom("conv2d");
    if (s == GS_OK) s = be->gemm(yb, a, xb);
    if (s == GS_OK && b) {
      int64_t bst[3] = {0, 1, 0};
      bias = view(b, 3, ys3, bst, 0);
      s = bias ? be->binary(GS_B_ADD, yb, yb, bias) : oom("conv2d");
    }
    REL(a); REL(xb); REL(yb); REL(bias);
    return s;
  }
  int64_t nmax = chunk_samples(be, p, gs_dtype_size(x4->dtype));
  int64_t colsh[1] = {G * K * nmax * L}, tmpsh[1] = {Cout * nmax * L};
  s = gs_tensor_empty(gs_tensor_device(x4), x4->dtype, 1, colsh, &col);
  if (s == GS_OK && nmax > 1 && G > 1) s = gs_tensor_empty(gs_tensor_device(x4), x4->dtype, 1, tmpsh, &tmp);
  for (int64_t n0 = 0; s == GS_OK && n0 < N; n0 += nmax) {
    int64_t n = N - n0 < nmax ? N - n0 : nmax;
    int64_t xsh[4] = {n, p->C, p->H, p->W}, csh[3] = {G * K, n, L}, ysh[3] = {n, Cout, L};
    /* col [G*K, n, L], read by the product as [G, K, n*L] */
    int64_t c3[3] = {G, K, n * L}, w3[3] = {G, Cog, K}, r3[3] = {G, Cog, n * L};
    gs_tensor *xc = rows_view(x4, n0, 4, xsh), *cv = rows_view(col, 0, 3, csh), *cg = rows_view(col, 0, 3, c3);
    gs_tensor *wg = rows_view(w4, 0, 3, w3), *yc = rows_view(y, n0, 3, ysh);
    /* groups: one product per group into tmp, then read back as y's
     * layout (one sample: the product is already laid out as y's chunk) */
    gs_tensor *r = n == 1 ? rows_view(y, n0, 3, r3) : G == 1 ? NULL : rows_view(tmp, 0, 3, r3);
    if (!xc || !cv || !cg || !wg || !yc || (!r && (n == 1 || G > 1))) s = oom("conv2d");
    if (s == GS_OK) s = be->im2col(cv, xc, &p->g);
    if (s == GS_OK && G == 1) {
      /* y[i] [Cout, L] = w [Cout, K] @ col[:, i, :] for each sample i: the
       * product writes y's chunk in place, no copy (measured on this host,
       * forward only, best of 6: LeNet's first layer 20 -> 27 GFLOP/s, its
       * second 36 -> 40, ResNet's 3x3 unchanged at 84) */
      int64_t ash[3] = {n, Cout, K}, ast[3] = {0, K, 1}, bsh[3] = {n, K, L}, bstr[3] = {L, n * L, 1};
      int64_t bst[3] = {0, 1, 0};
      gs_tensor *a = view(w4, 3, ash, ast, 0), *cs = view(col, 3, bsh, bstr, 0);
      gs_tensor *bv = b ? view(b, 3, ysh, bst, 0) : NULL;
      if (!a || !cs || (b && !bv)) s = oom("conv2d");
      if (s == GS_OK) s = be->gemm(yc, a, cs);
      if (s == GS_OK && bv) s = be->binary(GS_B_ADD, yc, yc, bv);
      REL(a); REL(cs); REL(bv);
      REL(xc); REL(cv); REL(cg); REL(wg); REL(yc); REL(r);
      continue;
    }
    if (s == GS_OK) s = be->gemm(r, wg, cg);
    if (s == GS_OK) {
      /* r read as [n, Cout, L]: element (i, co, l) at co*n*L + i*L + l */
      int64_t rsh[3] = {n, Cout, L}, rst[3] = {L, n * L, 1}, bst[3] = {0, 1, 0};
      gs_tensor *rv = n == 1 ? NULL : view(tmp, 3, rsh, rst, 0);
      gs_tensor *bv = b ? view(b, 3, rsh, bst, 0) : NULL;
      if ((n != 1 && !rv) || (b && !bv)) s = oom("conv2d");
      else if (n == 1 && bv) s = be->binary(GS_B_ADD, yc, yc, bv);
      else if (n != 1 && bv) s = be->binary(GS_B_ADD, yc, rv, bv);
      else if (n != 1) s = be->copy(yc, rv);
      REL(rv); REL(bv);
    }
    REL(xc); REL(cv); REL(cg); REL(wg); REL(yc); REL(r);
  }
  REL(col); REL(tmp);
  return s;
}

/* The backend's slots for a conv on t's device, or the "not implemented" error. */
static gs_status conv_backend(const gs_tensor *t, const char *name, const gs_backend **out) {
  const gs_backend *be;
  GS_DISPATCH(be, t, im2col, name);
  if (!be->col2im || !be->gemm || !be->copy || !be->binary) return gs_no_kernel(name, t);
  *out = be;
  return GS_OK;
}

gs_status gs_conv(const gs_tensor *x, const gs_tensor *w, const gs_tensor *b, const gs_conv_opts *o,
                  gs_tensor **out) {
  conv_plan p;
  GS_TRY(plan_conv(x, w, b, o, &p));
  const gs_backend *be = NULL;
  GS_TRY(conv_backend(x, op_name(o->nd), &be));
  gs_log_op(op_name(o->nd), x);
  gs_tensor *x4 = NULL, *w4 = NULL, *y = NULL, *bc = NULL;
  int64_t ysh[4] = {p.N, p.Cout, p.g.oh, p.g.ow}, K = p.Cg * p.g.kh * p.g.kw;
  gs_status s = as4d(x, w, &p, &x4, &w4);
  if (s == GS_OK && b) s = gs_contiguous(b, &bc);
  if (s == GS_OK) s = gs_tensor_empty(gs_tensor_device(x), x->dtype, 4, ysh, &y);
  gs_gpu_fused fz;
  bool terms = s == GS_OK && gs_numel(y) > 0 && K > 0;
  if (terms) begin_fused(&fz, &p, x, true, false, false);
  if (terms && use_wino(be, &p, x->dtype)) {
    s = be->conv3x3_wino(y, x4, w4, bc, p.g.ph, p.g.pw, false);
    wino_count();
  } else if (terms) s = forward4(be, x4, w4, bc, &p, y);
  else if (s == GS_OK && gs_numel(y) > 0) { /* no terms (no input channels): 0, plus the bias */
    s = be->fill(y, gs_scalar_f(0));
    if (s == GS_OK && bc) {
      int64_t bst[4] = {0, 1, 0, 0};
      gs_tensor *bv = view(bc, 4, ysh, bst, 0);
      s = bv ? be->binary(GS_B_ADD, y, y, bv) : oom("conv2d");
      REL(bv);
    }
  }
  gs_gpu_fused_end();
  if (s == GS_OK) s = gs_view(y, p.out_ndim, p.out_shape, out);
  REL(x4); REL(w4); REL(y); REL(bc);
  return s;
}

/* ---- backward ----------------------------------------------------------- */

/* gx4 [N, C, H, W] and gw4 [Cout, Cg, kh, kw] (either NULL when not
 * wanted; both contiguous, fully written) from gy4 [N, Cout, oh, ow]. */
static gs_status backward4(const gs_backend *be, const gs_tensor *x4, const gs_tensor *w4, const gs_tensor *gy4,
                           const conv_plan *p, gs_tensor *gx4, gs_tensor *gw4) {
  int64_t N = p->N, C = p->C, G = p->G, Cout = p->Cout, Cog = Cout / G, K = p->Cg * p->g.kh * p->g.kw,
          L = p->g.oh * p->g.ow;
  gs_device dev = gs_tensor_device(x4);
  gs_status s = GS_OK;
  bool fast = is_1x1(p);
  if (gx4 && fast) {
    /* gx[n] [C, L] = w^T [C, Cout] @ gy[n] [Cout, L], the weight broadcast */
    int64_t ash[3] = {N, C, Cout}, ast[3] = {0, 1, C}, gs3[3] = {N, Cout, L}, xs3[3] = {N, C, L};
    gs_tensor *a = view(w4, 3, ash, ast, 0), *gyb = rows_view(gy4, 0, 3, gs3), *gxb = rows_view(gx4, 0, 3, xs3);
    s = a && gyb && gxb ? be->gemm(gxb, a, gyb) : oom("conv2d backward");
    REL(a); REL(gyb); REL(gxb);
    if (s != GS_OK || !gw4) return s;
  }
  bool want_gx = gx4 && !fast;
  int64_t nmax = chunk_samples(be, p, gs_dtype_size(x4->dtype));
  gs_tensor *col = NULL, *gyt = NULL, *gwt = NULL;
  int64_t colsh[1] = {G * K * nmax * L}, gysh[1] = {Cout * nmax * L}, gwsh[3] = {G, Cog, K};
  s = gs_tensor_empty(dev, x4->dtype, 1, colsh, &col);
  if (s == GS_OK && nmax > 1) s = gs_tensor_empty(dev, x4->dtype, 1, gysh, &gyt);
  if (s == GS_OK && gw4 && nmax < N) s = gs_tensor_empty(dev, x4->dtype, 3, gwsh, &gwt);
  for (int64_t n0 = 0; s == GS_OK && n0 < N; n0 += nmax) {
    int64_t n = N - n0 < nmax ? N - n0 : nmax;
    int64_t ysh[3] = {n, Cout, L}, gp3[3] = {G, Cog, n * L};
    gs_tensor *gyc = rows_view(gy4, n0, 3, ysh);
    /* gy' [G, Cog, n*L]: the chunk with its samples side by side (one
     * sample already is) */
    gs_tensor *gyp = n == 1 ? rows_view(gy4, n0, 3, gp3) : rows_view(gyt, 0, 3, gp3);
    if (!gyc || !gyp) s = oom("conv2d backward");
    if (s == GS_OK && n != 1) {
      int64_t dst[3] = {L, n * L, 1};
      gs_tensor *dv = view(gyt, 3, ysh, dst, 0);
      s = dv ? be->copy(dv, gyc) : oom("conv2d backward");
      REL(dv);
    }
    int64_t xsh[4] = {n, C, p->H, p->W}, csh[3] = {G * K, n, L}, c3[3] = {G, K, n * L};
    gs_tensor *xc = NULL, *cv = NULL, *cg = NULL;
    if (s == GS_OK) {
      xc = rows_view(x4, n0, 4, xsh); cv = rows_view(col, 0, 3, csh); cg = rows_view(col, 0, 3, c3);
      if (!xc || !cv || !cg) s = oom("conv2d backward");
    }
    if (s == GS_OK && gw4) {
      /* gw [G, Cog, K] (+)= gy' [G, Cog, n*L] @ col^T [G, n*L, K] */
      int64_t tsh[3] = {G, n * L, K}, tst[3] = {K * n * L, 1, n * L};
      gs_tensor *ct = view(col, 3, tsh, tst, 0), *gw3 = rows_view(gw4, 0, 3, gwsh);
      if (!ct || !gw3) s = oom("conv2d backward");
      if (s == GS_OK) s = be->im2col(cv, xc, &p->g);
      if (s == GS_OK && n0 == 0) s = be->gemm(gw3, gyp, ct);
      else if (s == GS_OK) {
        s = be->gemm(gwt, gyp, ct);
        if (s == GS_OK) s = be->binary(GS_B_ADD, gw3, gw3, gwt);
      }
      REL(ct); REL(gw3);
    }
    if (s == GS_OK && want_gx) {
      /* gcol [G, K, n*L] = w^T [G, K, Cog] @ gy' (in col's memory, which
       * the weight gradient has finished reading), then gx = col2im(gcol) */
      int64_t wsh[3] = {G, K, Cog}, wst[3] = {Cog * K, 1, K};
      gs_tensor *wt = view(w4, 3, wsh, wst, 0), *gxc = rows_view(gx4, n0, 4, xsh);
      if (!wt || !gxc) s = oom("conv2d backward");
      if (s == GS_OK) s = be->gemm(cg, wt, gyp);
      if (s == GS_OK) s = be->col2im(gxc, cv, &p->g);
      REL(wt); REL(gxc);
    }
    REL(gyc); REL(gyp); REL(xc); REL(cv); REL(cg);
  }
  REL(col); REL(gyt); REL(gwt);
  return s;
}

gs_status gs_conv_backward(const gs_tensor *x, const gs_tensor *w, const gs_tensor *gy, const gs_conv_opts *o,
                           gs_tensor **gx, gs_tensor **gw, gs_tensor **gb) {
  if (gx) *gx = NULL;
  if (gw) *gw = NULL;
  if (gb) *gb = NULL;
  conv_plan p;
  GS_TRY(plan_conv(x, w, NULL, o, &p));
  GS_TRY(gs_check_same_device(x, gy));
  bool shape_ok = gy->ndim == p.out_ndim && gy->dtype == x->dtype;
  for (int i = 0; shape_ok && i < gy->ndim; i++) shape_ok = gy->shape[i] == p.out_shape[i];
  if (!shape_ok) {
    char want[160], got[160];
    gs_shape_str_n(p.out_ndim, p.out_shape, want, sizeof want);
    gs_shape_str(gy, got, sizeof got);
    return gs_error("%s backward: expected a gradient of shape %s and dtype %s, got %s %s", op_name(o->nd), want,
                    gs_dtype_name(x->dtype), got, gs_dtype_name(gy->dtype));
  }
  const gs_backend *be = NULL;
  GS_TRY(conv_backend(x, op_name(o->nd), &be));
  int64_t ysh[4] = {p.N, p.Cout, p.g.oh, p.g.ow}, xsh[4] = {p.N, p.C, p.H, p.W};
  int64_t wsh[4] = {p.Cout, p.Cg, p.g.kh, p.g.kw}, K = p.Cg * p.g.kh * p.g.kw;
  gs_tensor *x4 = NULL, *w4 = NULL, *gyc = NULL, *gy4 = NULL, *gx4 = NULL, *gw4 = NULL;
  gs_device dev = gs_tensor_device(x);
  gs_status s = as4d(x, w, &p, &x4, &w4);
  if (s == GS_OK) s = gs_contiguous(gy, &gyc);
  if (s == GS_OK) s = gs_view(gyc, 4, ysh, &gy4);
  if (s == GS_OK && gx) s = gs_tensor_empty(dev, x->dtype, 4, xsh, &gx4);
  if (s == GS_OK && gw) s = gs_tensor_empty(dev, x->dtype, 4, wsh, &gw4);
  /* with no terms (an empty batch, output or kernel) the gradients are 0 */
  bool empty = gs_numel(gy4 ? gy4 : x4) == 0 || K == 0 || p.N == 0;
  if (s == GS_OK && empty) {
    if (gx4 && gs_numel(gx4)) s = be->fill(gx4, gs_scalar_f(0));
    if (s == GS_OK && gw4 && gs_numel(gw4)) s = be->fill(gw4, gs_scalar_f(0));
  }
  gs_gpu_fused fz;
  bool run = s == GS_OK && !empty && (gx4 || gw4);
  if (run) begin_fused(&fz, &p, x, false, gx4 != NULL, gw4 != NULL);
  if (run && use_wino(be, &p, x->dtype)) {
    /* the input gradient is the forward conv of gy with the weight turned
     * 180 degrees and its channels swapped, padded 2 - pad */
    if (gx4) { s = be->conv3x3_wino(gx4, gy4, w4, NULL, 2 - p.g.ph, 2 - p.g.pw, true); wino_count(); }
    if (s == GS_OK && gw4) { s = be->conv3x3_wino_gw(gw4, x4, gy4, p.g.ph, p.g.pw); wino_count(); }
  } else if (run) s = backward4(be, x4, w4, gy4, &p, gx4, gw4);
  gs_gpu_fused_end();
  if (s == GS_OK && gx) s = gs_view(gx4, x->ndim, x->shape, gx);
  if (s == GS_OK && gw) s = gs_view(gw4, w->ndim, w->shape, gw);
  if (s == GS_OK && gb) {
    /* sum over samples and pixels: [N, Cout, L] -> [N, Cout] -> [Cout] */
    int64_t s3[3] = {p.N, p.Cout, p.g.oh * p.g.ow};
    gs_tensor *g3 = NULL, *g2 = NULL;
    s = gs_view(gy4, 3, s3, &g3);
    if (s == GS_OK) s = gs_reduce(GS_R_SUM, g3, 2, false, &g2, NULL);
    if (s == GS_OK) s = gs_reduce(GS_R_SUM, g2, 0, false, gb, NULL);
    REL(g3); REL(g2);
  }
  if (s != GS_OK) {
    if (gx) { REL(*gx); *gx = NULL; }
    if (gw) { REL(*gw); *gw = NULL; }
    if (gb) { REL(*gb); *gb = NULL; }
  }
  REL(x4); REL(w4); REL(gyc); REL(gy4); REL(gx4); REL(gw4);
  return s;
}
