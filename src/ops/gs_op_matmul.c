/* gs_op_matmul.c: mm, bmm and matmul with PyTorch's rules (1-d operands
 * promoted and squeezed back, batch dims broadcast), all reduced to one
 * batched [B, M, K] x [B, K, N] product for the backend. */
#include <stdio.h>
#include <string.h>
#include "core/gs_gpu_model.h"
#include "ops/gs_ops.h"

static gs_status check_dtypes(const gs_tensor *a, const gs_tensor *b) {
  if (a->dtype != b->dtype)
    return gs_error("expected m1 and m2 to have the same dtype, but got: %s != %s", gs_dtype_name(a->dtype),
                    gs_dtype_name(b->dtype));
  if (a->dtype == GS_BOOL) return gs_error("matrix products are not implemented for bool tensors");
  return GS_OK;
}

/* A half-precision product is computed here in float32 (two casts, a
 * float32 product, a cast back), where a real GPU runs one fp16 or bf16
 * tensor-core product: on a GPU that models one, the kernels queued in
 * between are priced as that product (gs_gpu_fused; other devices ignore
 * it). Returns whether the region began. */
static bool begin_half_product(gs_gpu_fused *f, const gs_tensor *a, const gs_tensor *b, gs_dtype cdt) {
  gs_device d = gs_tensor_device(a);
  if (cdt == a->dtype || d.type != GS_CUDA) return false;
  memset(f, 0, sizeof *f);
  f->name = "mm";
  f->dev = d.index;
  f->dtype = a->dtype;
  f->gemm = true;
  f->passes = 1;
  f->batch[0] = (double)a->shape[0], f->M[0] = (double)a->shape[1], f->K[0] = (double)a->shape[2];
  f->N[0] = (double)b->shape[2];
  f->bytes[0] = (double)gs_dtype_size(a->dtype) * f->batch[0] *
                (f->M[0] * f->K[0] + f->K[0] * f->N[0] + f->M[0] * f->N[0]);
  gs_gpu_fused_begin(f);
  return true;
}

/* c = a @ b for 3-d a [B, M, K] and b [B, K, N] (either may be a batch-
 * broadcast view), in the compute dtype, cast back to a's dtype. */
static gs_status gemm3(const gs_tensor *a, const gs_tensor *b, gs_tensor **out) {
  const gs_backend *be;
  GS_DISPATCH(be, a, gemm, "matmul");
  gs_dtype cdt = gs_compute_dtype(a->dtype);
  gs_tensor *ca = NULL, *cb = NULL, *c = NULL;
  int64_t shape[3] = {a->shape[0], a->shape[1], b->shape[2]};
  gs_gpu_fused fz;
  bool fused = begin_half_product(&fz, a, b, cdt);
  gs_status s = gs_cast(a, cdt, &ca);
  if (s == GS_OK) s = gs_cast(b, cdt, &cb);
  if (s == GS_OK) s = gs_tensor_empty(gs_tensor_device(a), cdt, 3, shape, &c);
  if (s == GS_OK) { gs_log_op("matmul", a); s = be->gemm(c, ca, cb); }
  if (s == GS_OK) s = gs_cast(c, a->dtype, out);
  if (fused) gs_gpu_fused_end();
  gs_tensor_release(ca); gs_tensor_release(cb); gs_tensor_release(c);
  return s;
}

static gs_status shapes_error(const gs_tensor *a, const gs_tensor *b, int64_t m, int64_t k1, int64_t k2, int64_t n) {
  (void)a; (void)b;
  return gs_error("mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", (long long)m,
                  (long long)k1, (long long)k2, (long long)n);
}

gs_status gs_mm(const gs_tensor *a, const gs_tensor *b, gs_tensor **out) {
  GS_TRY(gs_check_same_device(a, b));
  if (a->ndim != 2) return gs_error("self must be a matrix (mm expects 2-d tensors, got %d-d)", a->ndim);
  if (b->ndim != 2) return gs_error("mat2 must be a matrix (mm expects 2-d tensors, got %d-d)", b->ndim);
  GS_TRY(check_dtypes(a, b));
  if (a->shape[1] != b->shape[0]) return shapes_error(a, b, a->shape[0], a->shape[1], b->shape[0], b->shape[1]);
  gs_tensor *a3 = NULL, *b3 = NULL, *c3 = NULL;
  gs_status s = gs_unsqueeze(a, 0, &a3);
  if (s == GS_OK) s = gs_unsqueeze(b, 0, &b3);
  if (s == GS_OK) s = gemm3(a3, b3, &c3);
  if (s == GS_OK) s = gs_squeeze(c3, 0, out);
  gs_tensor_release(a3); gs_tensor_release(b3); gs_tensor_release(c3);
  return s;
}

gs_status gs_bmm(const gs_tensor *a, const gs_tensor *b, gs_tensor **out) {
  GS_TRY(gs_check_same_device(a, b));
  if (a->ndim != 3) return gs_error("batch1 must be a 3D tensor (got %d-d)", a->ndim);
  if (b->ndim != 3) return gs_error("batch2 must be a 3D tensor (got %d-d)", b->ndim);
  GS_TRY(check_dtypes(a, b));
  if (a->shape[0] != b->shape[0])
    return gs_error("batch1 and batch2 must have same number of batches, got %lld and %lld",
                    (long long)a->shape[0], (long long)b->shape[0]);
  if (a->shape[2] != b->shape[1])
    return gs_error("Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: [%lld, %lld].",
                    (long long)a->shape[0], (long long)a->shape[2], (long long)b->shape[0], (long long)b->shape[1]);
  return gemm3(a, b, out);
}

gs_status gs_matmul(const gs_tensor *a, const gs_tensor *b, gs_tensor **out) {
  GS_TRY(gs_check_same_device(a, b));
  if (a->ndim == 0 || b->ndim == 0)
    return gs_error("both arguments to matmul need to be at least 1D, but they are %dD and %dD", a->ndim, b->ndim);
  GS_TRY(check_dtypes(a, b));
  if (a->ndim == 2 && b->ndim == 2) return gs_mm(a, b, out);
  /* view a as [..., M, K] and b as [..., K, N] */
  int64_t ash[GS_MAX_DIMS], bsh[GS_MAX_DIMS];
  int an = a->ndim, bn = b->ndim;
  bool a_vec = an == 1, b_vec = bn == 1;
  gs_tensor *av = NULL, *bv = NULL;
  gs_status s = a_vec ? gs_unsqueeze(a, 0, &av) : (gs_tensor_retain((gs_tensor *)a), av = (gs_tensor *)a, GS_OK);
  if (s == GS_OK) s = b_vec ? gs_unsqueeze(b, 1, &bv) : (gs_tensor_retain((gs_tensor *)b), bv = (gs_tensor *)b, GS_OK);
  if (s != GS_OK) { gs_tensor_release(av); return s; }
  an = av->ndim; bn = bv->ndim;
  int64_t M = av->shape[an - 2], K = av->shape[an - 1], K2 = bv->shape[bn - 2], N = bv->shape[bn - 1];
  if (K != K2) {
    gs_tensor_release(av); gs_tensor_release(bv);
    if (a_vec && b_vec) return gs_error("inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the same number of elements, but got %lld and %lld elements respectively", (long long)K, (long long)K2, (long long)K, (long long)K2);
    return shapes_error(a, b, M, K, K2, N);
  }
  /* broadcast batch dims (nb stays 0 when they cannot be: the loops below
   * run before s is checked, and an uninitialised nb crashed them) */
  int nb = 0;
  int64_t batch[GS_MAX_DIMS];
  s = gs_broadcast_shapes(an - 2, av->shape, bn - 2, bv->shape, &nb, batch);
  int64_t B = 1;
  for (int i = 0; i < nb; i++) B *= batch[i];
  gs_tensor *ae = NULL, *be_ = NULL, *a3 = NULL, *b3 = NULL, *c3 = NULL, *c = NULL;
  if (s == GS_OK) {
    memcpy(ash, batch, sizeof(int64_t) * (size_t)nb); ash[nb] = M; ash[nb + 1] = K;
    memcpy(bsh, batch, sizeof(int64_t) * (size_t)nb); bsh[nb] = K; bsh[nb + 1] = N;
    s = gs_expand(av, nb + 2, ash, &ae);
  }
  if (s == GS_OK) s = gs_expand(bv, nb + 2, bsh, &be_);
  int64_t a3s[3] = {B, M, K}, b3s[3] = {B, K, N};
  if (s == GS_OK) s = gs_reshape(ae, 3, a3s, &a3);
  if (s == GS_OK) s = gs_reshape(be_, 3, b3s, &b3);
  if (s == GS_OK) s = gemm3(a3, b3, &c3);
  /* back to batch + [M, N], dropping the dims the 1-d operands added */
  int64_t csh[GS_MAX_DIMS];
  int cn = 0;
  for (int i = 0; i < nb; i++) csh[cn++] = batch[i];
  if (!a_vec) csh[cn++] = M;
  if (!b_vec) csh[cn++] = N;
  if (s == GS_OK) s = gs_view(c3, cn, csh, &c);
  gs_tensor *ts[] = {av, bv, ae, be_, a3, b3, c3};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gs_tensor_release(ts[i]);
  if (s == GS_OK) *out = c;
  return s;
}
