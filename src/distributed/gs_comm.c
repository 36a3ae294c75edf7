/* gs_comm.c: torch.cuda.comm, collectives between the devices of one
 * process. Real GPUs use NCCL for broadcast and reduce (one group call
 * drives every device); everything else is the engine's own copies, one
 * per device, counted in gs_transfers like any other move. */
#include <stdio.h>
#include <string.h>
#include "distributed/gs_comm.h"

/* The collective library of d's backend (NCCL on real GPUs), or NULL. */
static const gs_collectives *collectives_of(gs_device d) {
  const gs_backend *be = gs_device_backend(d);
  return be ? be->collectives : NULL;
}

/* Resolves devs[i] into out[i]; each must be a CUDA device that exists. */
static gs_status resolve_cuda(const char *fn, int n, const gs_device *devs, gs_device *out) {
  if (n < 1) return gs_error("%s: expected at least one device", fn);
  for (int i = 0; i < n; i++) {
    if (devs[i].type != GS_CUDA) return gs_error("%s: devices must be CUDA devices, got cpu at position %d", fn, i + 1);
    GS_TRY(gs_device_resolve(devs[i], &out[i]));
  }
  return GS_OK;
}

gs_status gs_comm_nccl_version(int *major, int *minor, int *patch) {
  const gs_backend *cuda = gs_backend_of_kind(GS_BACKEND_CUDA);
  if (cuda && cuda->collectives) return cuda->collectives->version(major, minor, patch);
  *major = *minor = *patch = 0;
  return gs_error("torch.cuda.nccl.version: this gshell was built without CUDA (nvcc was not found, or CUDA=0), so it "
                  "never loads NCCL");
}

/* A library's collective moved n copies of `bytes` between devices: they
 * count as device-to-device transfers, as the engine's copies do. */
static void count_moves(int n, uint64_t bytes) {
  gs_transfers.d2d.count += (uint64_t)n;
  gs_transfers.d2d.bytes += (uint64_t)n * bytes;
}

static bool all_distinct(int n, const gs_device *d) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (gs_device_equal(d[i], d[j])) return false;
  return true;
}

static void release_all(int n, gs_tensor **ts) {
  for (int i = 0; i < n; i++) { gs_tensor_release(ts[i]); ts[i] = NULL; }
}

gs_status gs_comm_broadcast(gs_tensor *src, int n, const gs_device *devs, gs_tensor **outs) {
  gs_device d[64];
  if (n > 64) return gs_error("broadcast: at most 64 devices, got %d", n);
  GS_TRY(resolve_cuda("broadcast", n, devs, d));
  if (!all_distinct(n, d)) return gs_error("broadcast: the devices must be distinct (a device appears twice)");
  gs_device sd = gs_tensor_device(src);
  const gs_collectives *coll = collectives_of(sd);
  int root = -1;
  for (int i = 0; i < n; i++) if (gs_device_equal(d[i], sd)) root = i;
  if (coll && root >= 0 && n > 1) {
    int ids[64];
    for (int i = 0; i < n; i++) ids[i] = d[i].index;
    gs_tensor *c;
    GS_TRY(gs_contiguous(src, &c));
    gs_status s = coll->broadcast(c, root, n, ids, outs);
    if (s == GS_OK) count_moves(n - 1, (uint64_t)gs_numel(src) * gs_dtype_size(src->dtype));
    if (s == GS_OK && c != src) { gs_tensor_release(outs[root]); outs[root] = src; gs_tensor_retain(src); }
    gs_tensor_release(c);
    return s;
  }
  for (int i = 0; i < n; i++) {
    gs_status s = gs_to(src, d[i], src->dtype, &outs[i]);
    if (s != GS_OK) { release_all(i, outs); return s; }
  }
  return GS_OK;
}

gs_status gs_comm_reduce_add(gs_tensor *const *ins, int n, gs_device dst, gs_tensor **out) {
  gs_device d[64];
  if (n < 1) return gs_error("reduce_add: expected a non-empty list of tensors");
  if (n > 64) return gs_error("reduce_add: at most 64 tensors, got %d", n);
  for (int i = 0; i < n; i++) {
    d[i] = gs_tensor_device(ins[i]);
    if (d[i].type != GS_CUDA) return gs_error("reduce_add: expected tensors on CUDA devices, tensor %d is on the cpu", i + 1);
    if (ins[i]->dtype != ins[0]->dtype)
      return gs_error("reduce_add: expected all inputs to have the same dtype, tensor 1 is %s and tensor %d is %s",
                      gs_dtype_name(ins[0]->dtype), i + 1, gs_dtype_name(ins[i]->dtype));
    if (ins[i]->ndim != ins[0]->ndim || memcmp(ins[i]->shape, ins[0]->shape, sizeof(int64_t) * (size_t)ins[0]->ndim)) {
      char a[128], b[128];
      gs_shape_str(ins[0], a, sizeof a);
      gs_shape_str(ins[i], b, sizeof b);
      return gs_error("reduce_add: expected all inputs to have the same shape, tensor 1 is %s and tensor %d is %s", a,
                      i + 1, b);
    }
  }
  if (!all_distinct(n, d)) return gs_error("reduce_add: expected the inputs on distinct devices (a device appears twice)");
  GS_TRY(gs_device_resolve(dst, &dst));
  const gs_collectives *coll = collectives_of(dst);
  int root = -1;
  for (int i = 0; i < n; i++) if (gs_device_equal(d[i], dst)) root = i;
  if (coll && root >= 0 && n > 1) {
    int ids[64];
    gs_tensor *c[64] = {NULL}, *r = NULL;
    gs_status s = GS_OK;
    bool unsupported = false;
    for (int i = 0; i < n && s == GS_OK; i++) { ids[i] = d[i].index; s = gs_contiguous(ins[i], &c[i]); }
    if (s == GS_OK) s = gs_tensor_empty(dst, ins[0]->dtype, ins[0]->ndim, ins[0]->shape, &r);
    if (s == GS_OK) s = coll->reduce_sum(c, root, n, ids, r, &unsupported);
    release_all(n, c);
    if (s == GS_OK) {
      count_moves(n - 1, (uint64_t)gs_numel(r) * gs_dtype_size(r->dtype));
      *out = r;
      return GS_OK;
    }
    gs_tensor_release(r);
    if (!unsupported) return s;
    /* a dtype NCCL has no type for (int16, bool): the copies below */
  }
  /* The sum accumulates on dst in input order: out = ins[0] + ins[1] + ... */
  gs_tensor *acc;
  GS_TRY(gs_tensor_empty(dst, ins[0]->dtype, ins[0]->ndim, ins[0]->shape, &acc));
  gs_status s = gs_copy_(acc, ins[0]);
  for (int i = 1; i < n && s == GS_OK; i++) {
    gs_tensor *moved;
    s = gs_to(ins[i], dst, ins[i]->dtype, &moved);
    if (s == GS_OK) { s = gs_binary_(GS_B_ADD, acc, moved); gs_tensor_release(moved); }
  }
  if (s != GS_OK) { gs_tensor_release(acc); return s; }
  *out = acc;
  return GS_OK;
}

gs_status gs_comm_scatter(gs_tensor *src, int n, const gs_device *devs, const int64_t *chunk_sizes, int nsizes,
                          int dim, int *nout, gs_tensor **outs) {
  gs_device d[64];
  if (n > 64) return gs_error("scatter: at most 64 devices, got %d", n);
  GS_TRY(resolve_cuda("scatter", n, devs, d));
  if (src->ndim == 0) return gs_error("scatter: cannot scatter a 0-dimensional tensor");
  if (dim < 0 || dim >= src->ndim)
    return gs_error("scatter: dim %d is out of range for a tensor with %d dimensions", dim + 1, src->ndim);
  int64_t rows = src->shape[dim], sizes[64];
  int k = 0;
  if (chunk_sizes && nsizes != n)
    return gs_error("scatter: chunk_sizes has %d entries for %d devices (one per device expected)", nsizes, n);
  if (chunk_sizes) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
      if (chunk_sizes[i] < 0) return gs_error("scatter: chunk_sizes[%d] is negative (%lld)", i + 1, (long long)chunk_sizes[i]);
      total += chunk_sizes[i];
      sizes[i] = chunk_sizes[i];
    }
    if (total != rows)
      return gs_error("scatter: chunk_sizes add up to %lld but the tensor has %lld rows along dim %d", (long long)total,
                      (long long)rows, dim + 1);
    k = n;
  } else {
    /* torch.chunk: chunks of ceil(rows / n); the last may be smaller and
     * there are fewer than n when rows run out */
    int64_t step = (rows + n - 1) / n;
    if (step == 0) step = 1;
    for (int64_t at = 0; at < rows && k < n; at += step) sizes[k++] = rows - at < step ? rows - at : step;
    if (rows == 0) sizes[k++] = 0;
  }
  int64_t at = 0;
  for (int i = 0; i < k; i++) {
    gs_tensor *part;
    gs_status s = gs_narrow(src, dim, at, sizes[i], &part);
    if (s == GS_OK) { s = gs_to(part, d[i], src->dtype, &outs[i]); gs_tensor_release(part); }
    if (s != GS_OK) { release_all(i, outs); return s; }
    /* a chunk already on its device is a view of src, as in PyTorch */
    at += sizes[i];
  }
  *nout = k;
  return GS_OK;
}

gs_status gs_comm_gather(gs_tensor *const *ins, int n, int dim, gs_device dst, gs_tensor **out) {
  if (n < 1) return gs_error("gather: expected a non-empty list of tensors");
  if (n > 64) return gs_error("gather: at most 64 tensors, got %d", n);
  GS_TRY(gs_device_resolve(dst, &dst));
  gs_tensor *moved[64] = {NULL};
  gs_status s = GS_OK;
  for (int i = 0; i < n && s == GS_OK; i++) {
    if (ins[i]->dtype != ins[0]->dtype)
      s = gs_error("gather: expected all tensors to have the same dtype, tensor 1 is %s and tensor %d is %s",
                   gs_dtype_name(ins[0]->dtype), i + 1, gs_dtype_name(ins[i]->dtype));
    else if (ins[i]->ndim == 0)
      s = gs_error("gather: tensor %d is 0-dimensional; gather concatenates along a dimension", i + 1);
    else s = gs_to(ins[i], dst, ins[i]->dtype, &moved[i]);
  }
  if (s == GS_OK) s = gs_cat(moved, n, dim, out);
  release_all(n, moved);
  return s;
}
