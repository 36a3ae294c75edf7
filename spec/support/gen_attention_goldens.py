#!/usr/bin/python3
"""Prints spec/support/attention_goldens.lua: the book's (Dive into Deep
Learning, PyTorch edition) sequence_mask, masked_softmax and
MaskedSoftmaxCELoss, ported here as the book writes them and run with
Debian's python3-torch (1.13); spec/d2l_attention_spec.lua checks
gshell's d2l against them. Regenerate with

    /usr/bin/python3 spec/support/gen_attention_goldens.py > spec/support/attention_goldens.lua

Inputs and upstream gradients come from formulas the spec repeats, in
float64: x[i] = ((i * 37 + 11 * step) % 101 - 50) / 16 and
g[i] = ((i * 13) % 29 - 14) / 8 over the flattened tensor (i from 0).
Labels in the file are gshell's (1-based); valid lengths are counts.
"""
import math
import torch
from torch import nn

torch.set_default_dtype(torch.float64)


# ---- the book's functions (d2l.ai, chapters 9.7 and 11.3), unchanged ----
def sequence_mask(X, valid_len, value=0):
    maxlen = X.size(1)
    mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)


class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
    def forward(self, pred, label, valid_len):
        weights = torch.ones_like(label)
        weights = sequence_mask(weights, valid_len)
        self.reduction = 'none'
        unweighted_loss = super(MaskedSoftmaxCELoss, self).forward(pred.permute(0, 2, 1), label)
        weighted_loss = (unweighted_loss * weights).mean(dim=1)
        return weighted_loss
# ---- end of the book's code ----


def fx(shape, step=0):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 37 + step * 11) % 101) - 50).double() / 16).reshape(shape)


def fg(shape):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 13) % 29) - 14).double() / 8).reshape(shape)


def lst(t):
    return "{" + ", ".join(repr(float(v)) for v in t.reshape(-1).tolist()) + "}"


def ints(v):
    return "{" + ", ".join(str(a) for a in v) + "}"


out = ["-- Written by spec/support/gen_attention_goldens.py (Debian's python3-torch %s); do not edit." % torch.__version__,
       "return {"]

# sequence_mask: the book's example (integers), and a 3-d X with value -1
X = torch.tensor([[1, 2, 3], [4, 5, 6]])
out.append("  sequence_mask_int = { out = %s }," % lst(sequence_mask(X, torch.tensor([1, 2]))))
X = fx([2, 3, 4])
out.append("  sequence_mask_3d = { valid = {1, 2}, out = %s }," % lst(sequence_mask(X, torch.tensor([1, 2]), value=-1)))

# masked_softmax: 1-d and 2-d valid lengths and none; X is a result
# (x * 1), as attention scores are, so the in-place mask is recorded
for name, shape, valid in [("masked_softmax_1d", [2, 2, 4], [2, 3]),
                           ("masked_softmax_2d", [2, 2, 4], [[1, 3], [2, 4]]),
                           ("masked_softmax_none", [2, 3], None)]:
    x = fx(list(shape), step=1).requires_grad_()
    vl = None if valid is None else torch.tensor(valid)
    y = masked_softmax(x * 1, vl)
    y.backward(fg(list(shape)))
    v = "nil" if valid is None else (ints(valid) if not isinstance(valid[0], list)
                                     else "{" + ", ".join(ints(r) for r in valid) + "}")
    out.append("  %s = { shape = %s, valid = %s, out = %s, gx = %s }," % (name, ints(shape), v, lst(y), lst(x.grad)))

# MaskedSoftmaxCELoss: the book's check, and scores from fx with labels
loss = MaskedSoftmaxCELoss()
l = loss(torch.ones(3, 4, 10), torch.ones((3, 4), dtype=torch.long), torch.tensor([4, 2, 0]))
out.append("  ce_book = { out = %s }," % lst(l))
pred = fx([3, 4, 5], step=2).requires_grad_()
label = (torch.arange(12) * 7 % 5).reshape(3, 4)
l = loss(pred, label, torch.tensor([3, 1, 4]))
l.backward(torch.tensor([1.0, -0.5, 2.0]))
out.append("  ce = { labels = %s, valid = {3, 1, 4}, g = {1.0, -0.5, 2.0}, out = %s, gpred = %s }," %
           (ints((label.reshape(-1) + 1).tolist()), lst(l), lst(pred.grad)))
out.append("}")
print("\n".join(out))
