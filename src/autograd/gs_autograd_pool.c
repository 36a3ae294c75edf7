/* gs_autograd_pool.c: gradients of pooling (through the saved argmax for
 * the max kinds), batch norm (x, weight and bias, with the statistics'
 * own gradient in training mode), resizing and constant padding. The
 * op's geometry travels in the node's ints. */
#include <string.h>
#include "autograd/gs_autograd_pool.h"

#define REL(t) gs_tensor_release(t)

_Static_assert(sizeof(gs_pool2d_params) <= sizeof(((gs_node *)0)->ints), "pool geometry fits a node");
_Static_assert(sizeof(gs_resize_params) <= sizeof(((gs_node *)0)->ints), "resize geometry fits a node");


/* ---- pooling ---- */

static gs_status bw_pool(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_pool2d_params p;
  memcpy(&p, n->ints, sizeof p);
  return gs_pool2d_backward(&p, g, n->saved[0], n->in_ndim[0], n->in_shape[0], n->in_dtype[0], &gr[0]);
}

static const char *pool_node(int kind) {
  switch (kind) {
  case GS_POOL_MAX: return "MaxPool2DWithIndicesBackward0";
  case GS_POOL_AVG: return "AvgPool2DBackward0";
  case GS_POOL_ADAPTIVE_MAX: return "AdaptiveMaxPool2DBackward0";
  default: return "AdaptiveAvgPool2DBackward0";
  }
}

gs_status gs_ag_pool2d(gs_tensor *x, const gs_pool2d_opts *o, gs_tensor **out, gs_tensor **argmax) {
  bool record = gs_ag_wants(&x, 1), is_max = o->kind == GS_POOL_MAX || o->kind == GS_POOL_ADAPTIVE_MAX;
  gs_tensor *idx = NULL;
  gs_pool2d_params p;
  GS_TRY(gs_pool2d(x, o, out, is_max && (record || argmax) ? &idx : NULL, &p));
  if (record) {
    gs_node *n = gs_node_new(pool_node(o->kind), bw_pool, 1, &x);
    gs_status s = GS_OK;
    if (n) {
      memcpy(n->ints, &p, sizeof p);
      if (idx) s = gs_node_save(n, 0, idx);
    }
    s = gs_ag_record(n, out, s);
    if (s != GS_OK) { REL(idx); return s; }
  }
  if (argmax) *argmax = idx;
  else REL(idx);
  return GS_OK;
}

/* ---- batch norm: inputs x, weight, bias; saved x, [mean; invstd], weight ---- */

static gs_status bw_batch_norm(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  bool training = n->ints[0], has_w = n->ints[1], has_b = n->ints[2];
  gs_tensor *gw = NULL, *gb = NULL;
  gs_status s = gs_batch_norm_backward(g, n->saved[0], n->saved[1], n->saved[2], training, &gr[0],
                                       has_w ? &gw : NULL, has_b ? &gb : NULL);
  if (s != GS_OK) return s;
  /* weight and bias get their gradients in their own dtype and shape */
  if (gw) { s = gs_to(gw, n->in_device[1], n->in_dtype[1], &gr[1]); REL(gw); }
  if (s == GS_OK && gb) { s = gs_to(gb, n->in_device[2], n->in_dtype[2], &gr[2]); REL(gb); }
  for (int i = 1; s == GS_OK && i < 3; i++)
    if (gr[i] && (gr[i]->ndim != n->in_ndim[i])) {
      gs_tensor *v = NULL;
      s = gs_reshape(gr[i], n->in_ndim[i], n->in_shape[i], &v);
      REL(gr[i]);
      gr[i] = v;
    }
  return s;
}

gs_status gs_ag_batch_norm(gs_tensor *x, gs_tensor *running_mean, gs_tensor *running_var, gs_tensor *weight,
                           gs_tensor *bias, bool training, double momentum, double eps, gs_tensor **out) {
  gs_tensor *ins[3] = {x, weight, bias};
  bool record = gs_ag_wants(ins, 3);
  gs_tensor *saved = NULL;
  GS_TRY(gs_batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps, out,
                       record ? &saved : NULL));
  if (!record) return GS_OK;
  gs_node *n = gs_node_new("NativeBatchNormBackward0", bw_batch_norm, 3, ins);
  gs_status s = GS_OK;
  if (n) {
    n->ints[0] = training;
    n->ints[1] = weight != NULL;
    n->ints[2] = bias != NULL;
    s = gs_node_save(n, 0, x);
    if (s == GS_OK) s = gs_node_save(n, 1, saved);
    if (s == GS_OK && weight) s = gs_node_save(n, 2, weight);
  }
  REL(saved);
  return gs_ag_record(n, out, s);
}

/* ---- resizing ---- */

static gs_status bw_interpolate(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_resize_params p;
  memcpy(&p, n->ints, sizeof p);
  return gs_interpolate_backward(&p, g, n->in_ndim[0], n->in_shape[0], n->in_dtype[0], &gr[0]);
}

gs_status gs_ag_interpolate(gs_tensor *x, int mode, bool align_corners, int64_t oh, int64_t ow, double scale_h,
                            double scale_w, gs_tensor **out) {
  gs_resize_params p;
  GS_TRY(gs_interpolate(x, mode, align_corners, oh, ow, scale_h, scale_w, out, &p));
  if (!gs_ag_wants(&x, 1)) return GS_OK;
  gs_node *n = gs_node_new(mode == GS_RESIZE_NEAREST ? "UpsampleNearest2DBackward1" : "UpsampleBilinear2DBackward1",
                           bw_interpolate, 1, &x);
  if (n) memcpy(n->ints, &p, sizeof p);
  return gs_ag_record(n, out, GS_OK);
}

/* ---- constant padding: the gradient is g with the padding cut off (and
 * zeros where the input was cropped), i.e. g padded by the opposite pads.
 * The node keeps each dim's leading pad; the trailing one follows from
 * the shapes. ---- */

static gs_status bw_pad(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  int nd = n->in_ndim[0];
  int64_t pads[2 * GS_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    int d = nd - 1 - i;
    int64_t lo = n->ints[d], hi = g->shape[d] - n->in_shape[0][d] - lo;
    pads[2 * i] = -lo;
    pads[2 * i + 1] = -hi;
  }
  return gs_pad(g, 2 * nd, pads, gs_scalar_f(0), &gr[0]);
}

gs_status gs_ag_pad(gs_tensor *x, int npads, const int64_t *pads, gs_scalar value, gs_tensor **out) {
  GS_TRY(gs_pad(x, npads, pads, value, out));
  if (!gs_ag_wants(&x, 1)) return GS_OK;
  gs_node *n = gs_node_new("ConstantPadNdBackward0", bw_pad, 1, &x);
  if (n) {
    for (int d = 0; d < x->ndim; d++) n->ints[d] = 0;
    for (int i = 0; i < npads / 2; i++) n->ints[x->ndim - 1 - i] = pads[2 * i];
  }
  return gs_ag_record(n, out, GS_OK);
}
