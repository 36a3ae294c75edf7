/* gs_autograd_conv.c: convolution with autograd. The node saves the input
 * and the weight and the options (in ints); its backward is the engine's
 * gs_conv_backward, asked only for the gradients some input needs:
 *   gx = col2im(w^T @ gy), gw = gy @ cols^T summed over the batch,
 *   gb = gy summed over the batch and the pixels.
 * Double backward is not supported: the backward itself records nothing. */
#include "autograd/gs_autograd.h"

static bool needs(const gs_node *n, int i) { return n->next_fn[i] || n->next_leaf[i]; }

static void opts_to_ints(const gs_conv_opts *o, int64_t *v) {
  v[0] = o->nd;
  v[1] = o->stride[0]; v[2] = o->stride[1];
  v[3] = o->padding[0]; v[4] = o->padding[1];
  v[5] = o->dilation[0]; v[6] = o->dilation[1];
  v[7] = o->groups;
  v[8] = o->pad_mode;
}

static void ints_to_opts(const int64_t *v, gs_conv_opts *o) {
  o->nd = (int)v[0];
  o->stride[0] = v[1]; o->stride[1] = v[2];
  o->padding[0] = v[3]; o->padding[1] = v[4];
  o->dilation[0] = v[5]; o->dilation[1] = v[6];
  o->groups = v[7];
  o->pad_mode = (gs_conv_pad_mode)v[8];
}

static gs_status bw_conv(gs_node *n, gs_tensor *g, gs_tensor **gr) {
  gs_conv_opts o;
  ints_to_opts(n->ints, &o);
  return gs_conv_backward(n->saved[0], n->saved[1], g, &o, needs(n, 0) ? &gr[0] : NULL,
                          needs(n, 1) ? &gr[1] : NULL, n->ninputs > 2 && needs(n, 2) ? &gr[2] : NULL);
}

gs_status gs_ag_conv(gs_tensor *x, gs_tensor *w, gs_tensor *b, const gs_conv_opts *o, gs_tensor **out) {
  GS_TRY(gs_conv(x, w, b, o, out));
  gs_tensor *ins[3] = {x, w, b};
  int nin = b ? 3 : 2;
  bool want = false;
  for (int i = 0; i < nin; i++) want |= gs_requires_grad(ins[i]);
  if (!gs_grad_enabled || !want) return GS_OK;
  gs_node *n = gs_node_new("ConvolutionBackward0", bw_conv, nin, ins);
  gs_status s = GS_OK;
  if (n) {
    opts_to_ints(o, n->ints);
    n->nints = 9;
    s = gs_node_save(n, 0, x);
    if (s == GS_OK) s = gs_node_save(n, 1, w);
  }
  return gs_ag_record(n, out, s);
}
