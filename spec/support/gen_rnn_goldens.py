#!/usr/bin/python3
"""Prints spec/support/rnn_goldens.lua: PyTorch's (Debian's python3-torch)
outputs, final states and gradients of nn.RNN, nn.GRU and nn.LSTM, which
spec/nn_rnn_spec.lua checks gshell against. Regenerate with

    /usr/bin/python3 spec/support/gen_rnn_goldens.py > spec/support/rnn_goldens.lua

Every tensor comes from a formula the spec repeats, in float64, over the
flattened tensor (i from 0): fx(step)[i] = ((i * 37 + 11 * step) % 101 - 50) / 16
and fg[i] = ((i * 13) % 29 - 14) / 8. The k-th parameter (1-based, in
named_parameters order) is fx(k) / 8, the input fx(0) / 2, h0 fx(50) / 4,
c0 fx(60) / 4. The loss is sum(out * fg) + sum(h_n * fg) / 2
(+ sum(c_n * fg) / 4 for the LSTM).
"""
import math
import torch

torch.set_default_dtype(torch.float64)


def fx(shape, step=0):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 37 + step * 11) % 101) - 50).double() / 16).reshape(shape)


def fg(shape):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 13) % 29) - 14).double() / 8).reshape(shape)


def num(v):
    r = "%.17g" % v
    if "." not in r and "e" not in r and "n" not in r:
        r += ".0"
    return r


def flat(t):
    return "{" + ", ".join(num(float(v)) for v in t.detach().reshape(-1).tolist()) + "}"


def lst(v):
    return "{" + ", ".join(str(e) for e in v) + "}"


def lua_val(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"%s"' % v
    return str(v)


out = ["-- Written by spec/support/gen_rnn_goldens.py (Debian's python3-torch " + torch.__version__ + "); do not edit.",
       "return {"]

T, B, I, H = 3, 2, 4, 3


def case(name, kind, opts, num_layers=1, h0=False, unbatched=False):
    cls = {"RNN": torch.nn.RNN, "GRU": torch.nn.GRU, "LSTM": torch.nn.LSTM}[kind]
    m = cls(I, H, num_layers, **opts)
    names = [n for n, _ in m.named_parameters()]
    with torch.no_grad():
        for k, (_, p) in enumerate(m.named_parameters()):
            p.copy_(fx(p.shape, k + 1) / 8)
    dirs = 2 if opts.get("bidirectional") else 1
    if unbatched:
        xshape = [T, I]
        hshape = [num_layers * dirs, H]
    else:
        xshape = [B, T, I] if opts.get("batch_first") else [T, B, I]
        hshape = [num_layers * dirs, B, H]
    x = (fx(xshape) / 2).requires_grad_()
    state = None
    ins = {"x": x}
    if h0:
        hx = (fx(hshape, 50) / 4).requires_grad_()
        ins["h0"] = hx
        state = hx
        if kind == "LSTM":
            cx = (fx(hshape, 60) / 4).requires_grad_()
            ins["c0"] = cx
            state = (hx, cx)
    y, st = m(x, state)
    if kind == "LSTM":
        hn, cn = st
    else:
        hn, cn = st, None
    loss = (y * fg(y.shape)).sum() + (hn * fg(hn.shape)).sum() / 2
    if cn is not None:
        loss = loss + (cn * fg(cn.shape)).sum() / 4
    loss.backward()
    parts = ['name = "%s"' % name, 'kind = "%s"' % kind, "num_layers = %d" % num_layers,
             "opts = {" + ", ".join("%s = %s" % (k, lua_val(v)) for k, v in opts.items()) + "}",
             "h0 = %s" % lua_val(h0), "xshape = " + lst(xshape), "hshape = " + lst(hshape),
             "names = {" + ", ".join('"%s"' % n for n in names) + "}",
             "out_shape = " + lst(y.shape), "out = " + flat(y), "hn = " + flat(hn)]
    if cn is not None:
        parts.append("cn = " + flat(cn))
    grads = ["%s = %s" % (n, flat(p.grad)) for n, p in m.named_parameters()]
    grads += ["%s = %s" % (k, flat(v.grad)) for k, v in ins.items()]
    parts.append("grads = {" + ", ".join(grads) + "}")
    out.append("  { " + ", ".join(parts) + " },")


case("RNN tanh, 2 layers, bidirectional", "RNN", {"bidirectional": True}, 2)
case("RNN relu, batch_first, h0", "RNN", {"nonlinearity": "relu", "batch_first": True}, 1, h0=True)
case("GRU, 2 layers, bidirectional", "GRU", {"bidirectional": True}, 2)
case("GRU, batch_first, h0", "GRU", {"batch_first": True}, 1, h0=True)
case("GRU, unbatched, h0", "GRU", {}, 1, h0=True, unbatched=True)
case("LSTM, 2 layers, bidirectional", "LSTM", {"bidirectional": True}, 2)
case("LSTM, batch_first, no bias, h0 and c0", "LSTM", {"batch_first": True, "bias": False}, 1, h0=True)
case("LSTM, 2 layers, bidirectional, batch_first, h0 and c0", "LSTM", {"bidirectional": True, "batch_first": True},
     2, h0=True)
out.append("}")
print("\n".join(out))
