#!/usr/bin/python3
"""Prints spec/support/triangle_goldens.lua: torch.triu and torch.tril
(forward, and the gradient of sum(out * g)) from Debian's python3-torch
(1.13) in float64; spec/triangle_spec.lua checks gshell's against them on
the cpu and on a simulated GPU. Regenerate with

    /usr/bin/python3 spec/support/gen_triangle_goldens.py > spec/support/triangle_goldens.lua

Inputs x[i] = ((i * 37) % 101 - 50) / 16 and g[i] = ((i * 13) % 29 - 14) / 8
over the flattened tensor (i from 0), as the spec makes them.
"""
import math
import torch

torch.set_default_dtype(torch.float64)


def fill(shape, a, m, c, d):
    i = torch.arange(math.prod(shape), dtype=torch.int64)
    return (((i * a) % m - c).to(torch.float64) / d).reshape(shape)


def lua_list(t):
    return "{" + ", ".join(repr(float(v)) for v in t.reshape(-1).tolist()) + "}"


CASES = [
    ("triu", [3, 4], 0), ("triu", [3, 4], 1), ("triu", [3, 4], -1), ("triu", [3, 4], 2),
    ("triu", [3, 4], 5), ("triu", [3, 4], -5), ("tril", [3, 4], 0), ("tril", [3, 4], 1),
    ("tril", [3, 4], -1), ("tril", [4, 3], -2), ("triu", [2, 3, 4], 1), ("tril", [2, 2, 3, 3], 0),
]

print("-- Written by spec/support/gen_triangle_goldens.py (Debian's python3-torch %s); do not edit." % torch.__version__)
print("return {")
for fn, shape, k in CASES:
    x = fill(shape, 37, 101, 50, 16).requires_grad_()
    g = fill(shape, 13, 29, 14, 8)
    out = getattr(torch, fn)(x, k)
    (out * g).sum().backward()
    print('  { fn = "%s", shape = {%s}, diagonal = %d,' % (fn, ", ".join(map(str, shape)), k))
    print("    out = %s," % lua_list(out.detach()))
    print("    grad = %s }," % lua_list(x.grad))
print("}")
