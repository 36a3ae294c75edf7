#!/usr/bin/python3
"""Prints spec/support/seq_goldens.lua: PyTorch's (Debian's python3-torch,
1.13) outputs and gradients for the functions of issue 31's first slice
(where, masked_fill, repeat, tile, repeat_interleave, boolean masks, erf,
gelu, one_hot, layer_norm, embedding, clip_grad_norm_), which
spec/seq_ops_spec.lua checks gshell against. Regenerate with

    /usr/bin/python3 spec/support/gen_seq_goldens.py > spec/support/seq_goldens.lua

Inputs and upstream gradients come from formulas the spec repeats, in
float64: x[i] = ((i * 37 + 11 * step) % 101 - 50) / 16 and
g[i] = ((i * 13) % 29 - 14) / 8 over the flattened tensor (i from 0).
Masks are (i % 3 == 1). Dims and ids in the file are gshell's (1-based).
"""
import math
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def fx(shape, step=0):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 37 + step * 11) % 101) - 50).double() / 16).reshape(shape)


def fg(shape):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 13) % 29) - 14).double() / 8).reshape(shape)


def fmask(shape):
    n = math.prod(shape)
    return (torch.arange(n) % 3 == 1).reshape(shape)


def num(v):
    if math.isnan(v):
        return "0/0"
    if math.isinf(v):
        return "math.huge" if v > 0 else "-math.huge"
    r = "%.17g" % v
    if "." not in r and "e" not in r and "n" not in r:
        r += ".0"
    return r


def flat(t):
    return "{" + ", ".join(num(float(v)) for v in t.detach().reshape(-1).tolist()) + "}"


def lst(v):
    return "{" + ", ".join(str(e) for e in v) + "}"


out = ["-- Written by spec/support/gen_seq_goldens.py (Debian's python3-torch " + torch.__version__ + "); do not edit.",
       "return {"]


def case(name, op, **fields):
    parts = ['name = "%s"' % name, 'op = "%s"' % op]
    for k, v in fields.items():
        parts.append("%s = %s" % (k, v))
    out.append("  { " + ", ".join(parts) + " },")


def run(fn, *inputs):
    ins = [t.clone().requires_grad_() for t in inputs]
    y = fn(*ins)
    y.backward(fg(y.shape))
    return y, [t.grad if t.grad is not None else torch.zeros_like(t) for t in ins]


# where(cond, x, y): cond [2, 3] (mask formula), x [2, 3], y [3] (broadcast)
x, yv = fx([2, 3]), fx([3], 1)
c = fmask([2, 3])
y, (gx, gy) = run(lambda a, b: torch.where(c, a, b), x, yv)
case("where, y broadcast", "where", xshape=lst([2, 3]), yshape=lst([3]), out_shape=lst(y.shape), out=flat(y),
     gx=flat(gx), gy=flat(gy))

# masked_fill with -inf then softmax over rows (attention's masking)
x = fx([3, 4])
m = fmask([3, 4])
y, (gx,) = run(lambda a: F.softmax(a.masked_fill(m, -1e6), dim=1), x)
case("masked_fill -1e6, softmax", "masked_softmax", xshape=lst([3, 4]), out_shape=lst(y.shape), out=flat(y),
     gx=flat(gx))
y = x.masked_fill(m, float("-inf"))
case("masked_fill -inf", "masked_fill_inf", xshape=lst([3, 4]), out_shape=lst(y.shape), out=flat(y))

# repeat and tile
x = fx([2, 3])
y, (gx,) = run(lambda a: a.repeat(2, 1, 2), x)
case("repeat(2, 1, 2)", "repeat", xshape=lst([2, 3]), reps=lst([2, 1, 2]), out_shape=lst(y.shape), out=flat(y),
     gx=flat(gx))
y, (gx,) = run(lambda a: a.tile((2,)), x)
case("tile(2)", "tile", xshape=lst([2, 3]), reps=lst([2]), out_shape=lst(y.shape), out=flat(y), gx=flat(gx))

# repeat_interleave: a count along a dim, a tensor of counts, flattened
y, (gx,) = run(lambda a: a.repeat_interleave(2, dim=1), x)
case("repeat_interleave(2, dim 2)", "ri_int", xshape=lst([2, 3]), reps=2, dim=2, out_shape=lst(y.shape),
     out=flat(y), gx=flat(gx))
y, (gx,) = run(lambda a: a.repeat_interleave(torch.tensor([1, 0, 3]), dim=1), x)
case("repeat_interleave({1, 0, 3}, dim 2)", "ri_tensor", xshape=lst([2, 3]), counts=lst([1, 0, 3]), dim=2,
     out_shape=lst(y.shape), out=flat(y), gx=flat(gx))
y, (gx,) = run(lambda a: a.repeat_interleave(2), x)
case("repeat_interleave(2), flattened", "ri_flat", xshape=lst([2, 3]), reps=2, out_shape=lst(y.shape),
     out=flat(y), gx=flat(gx))

# boolean masks: x[mask] over all dims and over the leading dim
x = fx([3, 4])
m = fmask([3, 4])
y, (gx,) = run(lambda a: a[m], x)
case("x[mask], same shape", "mask_index", xshape=lst([3, 4]), mshape=lst([3, 4]), out_shape=lst(y.shape),
     out=flat(y), gx=flat(gx))
m1 = fmask([3])
y, (gx,) = run(lambda a: a[m1], x)
case("x[mask], leading dim", "mask_index", xshape=lst([3, 4]), mshape=lst([3]), out_shape=lst(y.shape),
     out=flat(y), gx=flat(gx))
z = x.clone()
z[m] = 0.5
case("x[mask] = 0.5", "mask_assign_num", xshape=lst([3, 4]), mshape=lst([3, 4]), out=flat(z))
z = x.clone()
z[m1] = torch.tensor([9.0, 8.0, 7.0, 6.0])
case("x[mask] = row", "mask_assign_row", xshape=lst([3, 4]), mshape=lst([3]), out=flat(z))
z = x.clone()
z[m] = torch.arange(4.0)
case("x[mask] = values", "mask_assign_values", xshape=lst([3, 4]), mshape=lst([3, 4]), out=flat(z))

# erf and gelu
x = fx([2, 5])
y, (gx,) = run(torch.erf, x)
case("erf", "erf", xshape=lst([2, 5]), out_shape=lst(y.shape), out=flat(y), gx=flat(gx))
for approx in ["none", "tanh"]:
    y, (gx,) = run(lambda a: F.gelu(a, approximate=approx), x)
    case("gelu " + approx, "gelu", approximate='"%s"' % approx, xshape=lst([2, 5]), out_shape=lst(y.shape),
         out=flat(y), gx=flat(gx))

# one_hot (ids 1-based in gshell: id + 1)
ids = torch.tensor([[0, 2], [3, 2]])
y = F.one_hot(ids)
case("one_hot", "one_hot", ids=lst([[v + 1 for v in r] for r in ids.tolist()]).replace("[", "{").replace("]", "}"),
     out_shape=lst(y.shape), out=flat(y.double()))
y = F.one_hot(torch.tensor([1, 0]), 5)
case("one_hot, 5 classes", "one_hot", ids=lst([2, 1]), num_classes=5, out_shape=lst(y.shape), out=flat(y.double()))

# layer_norm over the last two dims with weight and bias; over the last one without
x = fx([2, 3, 4])
w, b = fx([3, 4], 2) / 4 + 1, fx([3, 4], 3) / 8
y, (gx, gw, gb) = run(lambda a, ww, bb: F.layer_norm(a, (3, 4), ww, bb, 1e-5), x, w, b)
case("layer_norm over [3, 4], affine", "layer_norm", xshape=lst([2, 3, 4]), ns=lst([3, 4]), affine="true",
     out_shape=lst(y.shape), out=flat(y), gx=flat(gx), gw=flat(gw), gb=flat(gb))
y, (gx,) = run(lambda a: F.layer_norm(a, (4,), eps=1e-3), x)
case("layer_norm over [4], eps 1e-3", "layer_norm", xshape=lst([2, 3, 4]), ns=lst([4]), eps=1e-3, affine="false",
     out_shape=lst(y.shape), out=flat(y), gx=flat(gx))

# embedding: weight [5, 3], ids with repeats and the padding row (0-based 1 -> gshell 2)
wt = fx([5, 3])
ids = torch.tensor([[0, 1, 4], [4, 4, 2]])
for pad in [None, 1]:
    y, (gw,) = run(lambda ww: F.embedding(ids, ww, padding_idx=pad), wt)
    case("embedding" + (", padding_idx" if pad is not None else ""), "embedding", wshape=lst([5, 3]),
         ids="{{1, 2, 5}, {5, 5, 3}}", padding_idx=("nil" if pad is None else str(pad + 1)), out_shape=lst(y.shape),
         out=flat(y), gw=flat(gw))

# clip_grad_norm_: two parameters whose gradients are g formulas
for norm_type, max_norm in [(2.0, 1.5), (float("inf"), 0.5), (1.0, 100.0)]:
    p1, p2 = torch.zeros(2, 3, requires_grad=True), torch.zeros(4, requires_grad=True)
    p1.grad, p2.grad = fg([2, 3]), fg([4]) * 2
    total = torch.nn.utils.clip_grad_norm_([p1, p2], max_norm, norm_type)
    case("clip_grad_norm_ %s %s" % (norm_type, max_norm), "clip", norm_type=num(norm_type), max_norm=num(max_norm),
         total=num(float(total)), g1=flat(p1.grad), g2=flat(p2.grad))

out.append("}")
print("\n".join(out))
