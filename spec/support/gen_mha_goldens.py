#!/usr/bin/python3
"""Prints spec/support/mha_goldens.lua: torch.nn.MultiheadAttention's
outputs, attention weights and gradients (inputs and every parameter)
from Debian's python3-torch (1.13), in float64; spec/nn_attention_spec.lua
checks gshell's nn.MultiheadAttention against them on the cpu and on a
simulated GPU. Regenerate with

    /usr/bin/python3 spec/support/gen_mha_goldens.py > spec/support/mha_goldens.lua

Every tensor comes from formulas the spec repeats, over the flattened
tensor (i from 0): inputs x[i] = ((i * 37 + 11 * step) % 101 - 50) / 32,
parameters p[i] = ((i * 29 + 7 * step) % 53 - 26) / 64 (step = the
parameter's position in named_parameters()), and the loss is
sum(out * go) + sum(weights * gw) with go[i] = ((i * 13) % 29 - 14) / 8 and
gw[i] = ((i * 17) % 23 - 11) / 4.

A float key_padding_mask is added to the scores (as PyTorch 2 does; 1.13
refuses it): its golden comes from the same mask given as a 3-d float
attn_mask, which 1.13 adds.
"""
import math
import torch
from torch import nn

torch.set_default_dtype(torch.float64)


def fx(shape, step=0):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 37 + step * 11) % 101) - 50).double() / 32).reshape(shape)


def fp(shape, step):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 29 + step * 7) % 53) - 26).double() / 64).reshape(shape)


def fg(shape, a, m, c, d):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * a) % m) - c).double() / d).reshape(shape)


def lst(t):
    return "{" + ", ".join(repr(float(v)) for v in t.reshape(-1).tolist()) + "}"


def ints(v):
    return "{" + ", ".join(str(a) for a in v) + "}"


def bools(t):
    return "{" + ", ".join("true" if b else "false" for b in t.reshape(-1).tolist()) + "}"


out = ["-- Written by spec/support/gen_mha_goldens.py (Debian's python3-torch %s); do not edit." % torch.__version__,
       "return {"]


def case(name, E, H, opts, q_shape, k_shape, v_shape, fwd=None, masks=""):
    fwd = fwd or {}
    m = nn.MultiheadAttention(E, H, **opts)
    names = []
    with torch.no_grad():
        for step, (n, p) in enumerate(m.named_parameters()):
            p.copy_(fp(list(p.shape), step))
            names.append(n)
    q = fx(q_shape, 1).requires_grad_()
    k = fx(k_shape, 2).requires_grad_()
    v = fx(v_shape, 3).requires_grad_()
    o, w = m(q, k, v, **fwd)
    loss = (o * fg(list(o.shape), 13, 29, 14, 8)).sum()
    wl = "nil"
    if w is not None:
        loss = loss + (w * fg(list(w.shape), 17, 23, 11, 4)).sum()
        wl = "{ shape = %s, v = %s }" % (ints(w.shape), lst(w))
    loss.backward()
    grads = ", ".join('["%s"] = %s' % (n, lst(p.grad)) for n, p in m.named_parameters())
    out.append('  %s = { E = %d, H = %d, q = %s, k = %s, v = %s, names = {%s},%s\n    out = { shape = %s, v = %s },\n'
               '    weights = %s,\n    gq = %s, gk = %s, gv = %s,\n    grads = { %s } },'
               % (name, E, H, ints(q_shape), ints(k_shape), ints(v_shape),
                  ", ".join('"%s"' % n for n in names), masks, ints(o.shape), lst(o), wl,
                  lst(q.grad), lst(k.grad), lst(v.grad), grads))


# 1. sequence first, one embed dim, boolean masks (a causal attn_mask and
#    key padding); weights averaged over the heads
L, S, N, E, H = 3, 4, 2, 8, 2
causal = torch.triu(torch.ones(L, S, dtype=torch.bool), diagonal=2)
kpm = torch.tensor([[False, False, False, True], [False, False, True, True]])
case("bool_masks", E, H, {}, [L, N, E], [S, N, E], [S, N, E],
     {"attn_mask": causal, "key_padding_mask": kpm},
     "\n    attn_mask = %s, key_padding_mask = %s," % (bools(causal), bools(kpm)))

# 2. batch_first, kdim and vdim, a float 2-d attn_mask and a float key
#    padding mask (given to 1.13 merged into a 3-d attn_mask), weights
#    per head
amask = fg([L, S], 5, 7, 3, 4)
fkpm = torch.tensor([[0.0, -1.5, 0.25, -100.0], [0.5, 0.0, -2.0, 1.0]])
merged = amask.reshape(1, 1, L, S) + fkpm.reshape(N, 1, 1, S)
merged = merged.expand(N, H, L, S).reshape(N * H, L, S)
case("kdim_vdim_float_masks", E, H, {"batch_first": True, "kdim": 5, "vdim": 6}, [N, L, E], [N, S, 5], [N, S, 6],
     {"attn_mask": merged, "average_attn_weights": False},
     "\n    attn_mask = %s, key_padding_mask = %s," % (lst(amask), lst(fkpm)))

# 3. unbatched inputs, no bias, 4 heads
case("unbatched_nobias", E, 4, {"bias": False}, [L, E], [S, E], [S, E])

# 4. need_weights = False: the output alone
case("no_weights", E, H, {}, [L, N, E], [L, N, E], [L, N, E], {"need_weights": False})

out.append("}")
print("\n".join(out))
