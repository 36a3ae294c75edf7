#!/usr/bin/python3
"""Prints spec/support/pool_goldens.lua: PyTorch's (Debian's python3-torch,
1.13) outputs and gradients for pooling, batch norm, interpolate and pad,
which spec/pool_norm_spec.lua checks gshell against. Regenerate with

    /usr/bin/python3 spec/support/gen_pool_goldens.py > spec/support/pool_goldens.lua

Inputs and upstream gradients come from formulas the spec repeats
(`formula_x`, `formula_g` in the spec), in float64, so no input data is
stored: x[i] = ((i * 37) % 101 - 50) / 16 and g[i] = ((i * 13) % 29 - 14) / 8
over the flattened tensor (i from 0); `ties` inputs are (i % 3) instead,
`nan` inputs put a NaN at flat position 5, `specials` NaNs at 0 and 5
and -inf at 2, 3, 6 and 7. Outputs are float64 values as
%.17g (exact round trip); NaN is written 0/0.
"""
import math
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def formula_x(shape, kind="plain", step=0):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    if kind == "ties":
        v = (i % 3).double()
    else:
        v = (((i * 37 + step * 11) % 101) - 50).double() / 16
    if kind == "nan":
        v[5] = float("nan")
    if kind == "specials":  # two NaNs in one 2x2 window, a window of -inf
        v[0] = v[5] = float("nan")
        v[2] = v[3] = v[6] = v[7] = float("-inf")
    return v.reshape(shape)


def formula_g(shape):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 13) % 29) - 14).double() / 8).reshape(shape)


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
    return "{" + ", ".join(num(v) for v in t.detach().reshape(-1).tolist()) + "}"


def ints(t):
    return "{" + ", ".join(str(int(v)) for v in t.reshape(-1).tolist()) + "}"


def lua_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"%s"' % v
    if isinstance(v, (tuple, list)):
        return "{" + ", ".join(lua_value(e) for e in v) + "}"
    raise TypeError(v)


def lua_opts(d):
    return "{" + ", ".join("%s = %s" % (k, lua_value(v)) for k, v in d.items()) + "}"


out = []


def emit(fields):
    out.append("  {" + ", ".join("%s = %s" % (k, v) for k, v in fields) + "},")


def pool_case(name, op, shape, arg, opts, kind="plain"):
    x = formula_x(shape, kind).requires_grad_()
    fn = getattr(F, op)
    kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in opts.items()}
    a = tuple(arg) if isinstance(arg, list) else arg
    idx = None
    if op in ("max_pool2d", "adaptive_max_pool2d"):
        y, idx = fn(x, a, return_indices=True, **kw)
    else:
        y = fn(x, a, **kw)
    g = formula_g(y.shape)
    y.backward(g)
    fields = [("name", '"%s"' % name), ("op", '"%s"' % op), ("shape", lua_value(list(shape))),
              ("arg", lua_value(arg)), ("opts", lua_opts(opts)), ("input", '"%s"' % kind),
              ("out_shape", lua_value(list(y.shape))), ("out", flat(y)), ("gx", flat(x.grad))]
    if idx is not None:
        fields.append(("idx", ints(idx)))
    emit(fields)


pool_case("max 3x3 s2 p1, odd sizes", "max_pool2d", (2, 3, 7, 9), 3, {"stride": 2, "padding": 1})
pool_case("max 2x2 default stride", "max_pool2d", (1, 2, 8, 8), 2, {})
pool_case("max stride > kernel, non-square", "max_pool2d", (2, 1, 9, 7), [3, 2], {"stride": [3, 4], "padding": [1, 0]})
pool_case("max ceil_mode", "max_pool2d", (1, 2, 7, 7), 3, {"stride": 2, "ceil_mode": True})
pool_case("max ceil_mode with padding", "max_pool2d", (1, 1, 6, 8), 3, {"stride": 2, "padding": 1, "ceil_mode": True})
pool_case("max dilation with padding", "max_pool2d", (1, 1, 10, 9), 3, {"stride": 1, "padding": 1, "dilation": 2})
pool_case("max dilation, stride 2, ceil_mode", "max_pool2d", (2, 1, 9, 8), [2, 3], {"stride": 2, "padding": 1, "dilation": [2, 3], "ceil_mode": True})
pool_case("max ties keep the first", "max_pool2d", (1, 1, 6, 6), 3, {"stride": 1}, "ties")
pool_case("max overlapping ties", "max_pool2d", (1, 2, 5, 7), 3, {"stride": 2, "padding": 1}, "ties")
pool_case("max unbatched", "max_pool2d", (3, 5, 5), 2, {})
pool_case("max NaN propagates", "max_pool2d", (1, 1, 4, 6), 2, {}, "nan")
pool_case("max 2x2 ties, odd sizes", "max_pool2d", (2, 2, 5, 7), 2, {}, "ties")
pool_case("max 2x2: the last NaN of a window, a window of -inf", "max_pool2d", (1, 2, 4, 4), 2, {}, "specials")
pool_case("max 2x2 stride 2 ceil_mode, odd sizes", "max_pool2d", (1, 2, 5, 7), 2, {"ceil_mode": True})
pool_case("max batch of 1, channel of 1, 1x1 kernel", "max_pool2d", (1, 1, 3, 3), 1, {"stride": 2})
pool_case("avg 3x3 s2 p1 count_include_pad", "avg_pool2d", (2, 3, 7, 9), 3, {"stride": 2, "padding": 1})
pool_case("avg 3x3 s2 p1 excluding pad", "avg_pool2d", (2, 3, 7, 9), 3, {"stride": 2, "padding": 1, "count_include_pad": False})
pool_case("avg ceil_mode include pad", "avg_pool2d", (1, 2, 7, 7), 3, {"stride": 2, "padding": 1, "ceil_mode": True})
pool_case("avg ceil_mode exclude pad", "avg_pool2d", (1, 2, 7, 7), 3, {"stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False})
pool_case("avg non-square stride > kernel", "avg_pool2d", (1, 1, 5, 8), [2, 3], {"stride": [3, 1]})
pool_case("avg unbatched", "avg_pool2d", (2, 6, 6), 2, {})
pool_case("adaptive avg non-divisible", "adaptive_avg_pool2d", (2, 3, 7, 9), [3, 4], {})
pool_case("adaptive avg to 1x1", "adaptive_avg_pool2d", (2, 4, 5, 5), 1, {})
pool_case("adaptive avg larger than input", "adaptive_avg_pool2d", (1, 2, 3, 3), [5, 4], {})
pool_case("adaptive avg unbatched", "adaptive_avg_pool2d", (2, 10, 7), [3, 5], {})
pool_case("adaptive max non-divisible", "adaptive_max_pool2d", (2, 3, 7, 9), [3, 4], {})
pool_case("adaptive max ties", "adaptive_max_pool2d", (1, 1, 7, 5), [3, 2], {}, "ties")
pool_case("adaptive max larger than input", "adaptive_max_pool2d", (1, 2, 3, 3), [5, 4], {})

print("-- Generated by spec/support/gen_pool_goldens.py from PyTorch %s; do not edit." % torch.__version__)
print("local nan = 0/0")
print("local G = {}")
print("G.pool = {")
print("\n".join(out))
print("}")
out.clear()


# ---- batch norm ----
def bn_case(name, shape, training, affine, steps=1, momentum=0.1, eps=1e-5):
    c = shape[1]
    rm = (torch.arange(c).double() - 1) / 4
    rv = 1 + torch.arange(c).double() / 2
    w = (1 + torch.arange(c).double() / 3).requires_grad_() if affine else None
    b = (torch.arange(c).double() / 5 - 0.2).requires_grad_() if affine else None
    fields = [("name", '"%s"' % name), ("shape", lua_value(list(shape))), ("training", lua_value(training)),
              ("affine", lua_value(affine)), ("steps", str(steps)), ("momentum", repr(momentum)), ("eps", repr(eps)),
              ("rm0", flat(rm)), ("rv0", flat(rv))]
    if affine:
        fields += [("w", flat(w)), ("b", flat(b))]
    outs, rms, rvs = [], [], []
    for step in range(steps):
        x = formula_x(shape, step=step).requires_grad_()
        y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=momentum, eps=eps)
        outs.append(flat(y))
        rms.append(flat(rm))
        rvs.append(flat(rv))
    # gradients of the last step
    g = formula_g(y.shape)
    y.backward(g)
    fields += [("out", "{" + ", ".join(outs) + "}"), ("rm", "{" + ", ".join(rms) + "}"),
               ("rv", "{" + ", ".join(rvs) + "}"), ("gx", flat(x.grad))]
    if affine:
        fields += [("gw", flat(w.grad)), ("gb", flat(b.grad))]
    with torch.no_grad():
        ye = F.batch_norm(formula_x(shape, step=steps), rm, rv, w, b, training=False, eps=eps)
    fields.append(("eval_out", flat(ye)))
    emit(fields)


bn_case("(N, C) training, three steps", (4, 3), True, True, steps=3)
bn_case("(N, C, L) training", (2, 3, 5), True, True, steps=2, momentum=0.3)
bn_case("(N, C, H, W) training", (2, 3, 4, 5), True, True, steps=3)
bn_case("(N, C, H, W) training without affine", (3, 2, 3, 3), True, False, steps=2, eps=1e-3)
bn_case("(N, C, H, W) evaluation", (2, 3, 4, 5), False, True)
bn_case("(N, C) evaluation", (5, 4), False, True)
bn_case("batch of 1, (1, C, H, W) training", (1, 2, 3, 3), True, True)
print("G.batch_norm = {")
print("\n".join(out))
print("}")
out.clear()


# ---- interpolate ----
def interp_case(name, shape, opts):
    x = formula_x(shape).requires_grad_()
    kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in opts.items()}
    y = F.interpolate(x, **kw)
    g = formula_g(y.shape)
    y.backward(g)
    emit([("name", '"%s"' % name), ("shape", lua_value(list(shape))), ("opts", lua_opts(opts)),
          ("out_shape", lua_value(list(y.shape))), ("out", flat(y)), ("gx", flat(x.grad))])


interp_case("nearest to a size", (1, 2, 4, 5), {"size": [7, 3], "mode": "nearest"})
interp_case("nearest scale 2", (2, 1, 3, 4), {"scale_factor": 2, "mode": "nearest"})
interp_case("nearest scale 1.5", (1, 2, 5, 4), {"scale_factor": 1.5, "mode": "nearest"})
interp_case("nearest down", (1, 1, 9, 7), {"size": [4, 3], "mode": "nearest"})
interp_case("nearest 3-d", (2, 2, 5), {"size": 8, "mode": "nearest"})
interp_case("bilinear up", (1, 2, 4, 5), {"size": [7, 8], "mode": "bilinear"})
interp_case("bilinear down", (1, 2, 9, 7), {"size": [4, 3], "mode": "bilinear"})
interp_case("bilinear up align_corners", (1, 2, 4, 5), {"size": [7, 8], "mode": "bilinear", "align_corners": True})
interp_case("bilinear down align_corners", (1, 2, 9, 7), {"size": [4, 3], "mode": "bilinear", "align_corners": True})
interp_case("bilinear scale 1.7", (1, 1, 5, 6), {"scale_factor": 1.7, "mode": "bilinear"})
interp_case("bilinear scale 0.5", (2, 1, 6, 7), {"scale_factor": 0.5, "mode": "bilinear"})
interp_case("bilinear scale 1.7 recomputed", (1, 1, 5, 6), {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True})
interp_case("nearest scale 1.7 recomputed", (1, 1, 5, 6), {"scale_factor": 1.7, "recompute_scale_factor": True})
interp_case("bilinear to 1x1 align_corners", (1, 1, 4, 4), {"size": [1, 1], "mode": "bilinear", "align_corners": True})
interp_case("linear 3-d", (2, 3, 5), {"size": 8, "mode": "linear"})
interp_case("linear 3-d align_corners", (2, 3, 5), {"size": 3, "mode": "linear", "align_corners": True})
print("G.interpolate = {")
print("\n".join(out))
print("}")
out.clear()


# ---- pad ----
def pad_case(name, shape, pads, value=0.0):
    x = formula_x(shape).requires_grad_()
    y = F.pad(x, tuple(pads), value=value)
    g = formula_g(y.shape)
    y.backward(g)
    emit([("name", '"%s"' % name), ("shape", lua_value(list(shape))), ("pads", lua_value(pads)),
          ("value", repr(value)), ("out_shape", lua_value(list(y.shape))), ("out", flat(y)), ("gx", flat(x.grad))])


pad_case("last dim", (2, 3, 4), [1, 2])
pad_case("two dims with a value", (2, 3, 4), [1, 2, 0, 1], 1.5)
pad_case("negative pads crop", (2, 3, 5), [-1, 2, 1, -2])
pad_case("4-d all sides", (1, 2, 3, 3), [1, 1, 1, 1])
pad_case("three dims", (2, 2, 2), [0, 1, 1, 0, 2, 1], -3.0)
print("G.pad = {")
print("\n".join(out))
print("}")
print("return G")
