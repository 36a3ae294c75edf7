#!/usr/bin/python3
"""Prints spec/support/transformer_goldens.lua: the book's (Dive into Deep
Learning, PyTorch edition 1.0, 11.3 to 11.7) attention and transformer
modules, ported here as the book writes them and run with Debian's
python3-torch (1.13) in float64 and eval mode; spec/d2l_transformer_spec.lua
checks gshell's d2l modules against them. Regenerate with

    /usr/bin/python3 spec/support/gen_transformer_goldens.py > spec/support/transformer_goldens.lua

Every tensor comes from formulas the spec repeats, over the flattened
tensor (i from 0): inputs x[i] = ((i * 37 + 11 * step) % 101 - 50) / 32,
parameters p[i] = ((i * 29 + 7 * step) % 53 - 26) / 64 (step = the
parameter's position in named_parameters(), after a first call has sized
the lazy layers) and the loss is sum(out * go), go[i] = ((i * 13) % 29 - 14) / 8.
Token ids are (i * 7 + 3) % vocab (0-based here; gshell's are one more).
"""
import math
import torch
from torch import nn

torch.set_default_dtype(torch.float64)


# ---- the book's code (d2l.ai 1.0, chapters 11.3 to 11.7), unchanged ----
def sequence_mask(X, valid_len, value=0):
    maxlen = X.size(1)
    mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    def _sequence_mask(X, valid_len, value=0):
        return sequence_mask(X, valid_len, value)
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens, dropout, **kwargs):
        super(AdditiveAttention, self).__init__(**kwargs)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = queries.unsqueeze(2) + keys.unsqueeze(1)
        features = torch.tanh(features)
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class MultiHeadAttention(nn.Module):
    def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_k = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_v = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_o = nn.LazyLinear(num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)
        output_concat = self.transpose_output(output)
        return self.W_o(output_concat)

    def transpose_qkv(self, X):
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        X = X.permute(0, 2, 1, 3)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def transpose_output(self, X):
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
        X = X.permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)


class PositionalEncoding(nn.Module):
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.P = torch.zeros((1, max_len, num_hiddens))
        X = torch.arange(max_len, dtype=torch.float32).reshape(
            -1, 1) / torch.pow(10000, torch.arange(
            0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)
        self.P[:, :, 0::2] = torch.sin(X)
        self.P[:, :, 1::2] = torch.cos(X)

    def forward(self, X):
        X = X + self.P[:, :X.shape[1], :].to(X.device)
        return self.dropout(X)


class PositionWiseFFN(nn.Module):
    def __init__(self, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.LazyLinear(ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.LazyLinear(ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))


class AddNorm(nn.Module):
    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X, valid_lens):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))


class TransformerEncoder(nn.Module):  # d2l.Encoder is a plain nn.Module
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, use_bias=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module("block" + str(i), TransformerEncoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias))

    def forward(self, X, valid_lens):
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X, valid_lens)
            self.attention_weights[i] = blk.attention.attention.attention_weights
        return X
# ---- end of the book's code ----


def fx(shape, step=0):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 37 + step * 11) % 101) - 50).double() / 32).reshape(shape)


def fp(shape, step):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 29 + step * 7) % 53) - 26).double() / 64).reshape(shape)


def fg(shape):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    return ((((i * 13) % 29) - 14).double() / 8).reshape(shape)


def lst(t):
    return "{" + ", ".join(repr(float(v)) for v in t.reshape(-1).tolist()) + "}"


def ints(v):
    return "{" + ", ".join(str(a) for a in v) + "}"


out = ["-- Written by spec/support/gen_transformer_goldens.py (Debian's python3-torch %s); do not edit."
       % torch.__version__, "return {"]


def run(name, net, inputs, extra):
    """inputs: tensors (float ones get gradients); extra: the other args."""
    net(*inputs, *extra)  # sizes the lazy layers
    net.eval()
    names = []
    with torch.no_grad():
        for step, (n, p) in enumerate(net.named_parameters()):
            p.copy_(fp(list(p.shape), step))
            names.append(n)
    for x in inputs:
        if x.is_floating_point():
            x.requires_grad_()
    o = net(*inputs, *extra)
    (o * fg(list(o.shape))).sum().backward()
    gin = ", ".join(lst(x.grad) for x in inputs if x.is_floating_point())
    grads = ", ".join('["%s"] = %s' % (n, lst(p.grad)) for n, p in net.named_parameters())
    w = getattr(net, "attention_weights", None)
    if isinstance(w, list):
        w = w[-1]
    if w is None and hasattr(net, "attention"):
        a = net.attention
        w = a.attention.attention_weights if hasattr(a, "attention") else a.attention_weights
    wl = "nil" if w is None else "{ shape = %s, v = %s }" % (ints(w.shape), lst(w))
    out.append('  %s = { names = {%s},\n    out = { shape = %s, v = %s },\n    weights = %s,\n'
               '    gin = { %s },\n    grads = { %s } },'
               % (name, ", ".join('"%s"' % n for n in names), ints(o.shape), lst(o), wl, gin, grads))


valid = torch.tensor([2, 6])
run("dot", DotProductAttention(0.5), [fx([2, 1, 2], 1), fx([2, 10, 2], 2), fx([2, 10, 4], 3)], [valid])
run("additive", AdditiveAttention(8, 0.1), [fx([2, 1, 20], 1), fx([2, 10, 2], 2), fx([2, 10, 4], 3)], [valid])
run("mha", MultiHeadAttention(12, 3, 0.5), [fx([2, 4, 12], 1), fx([2, 6, 10], 2), fx([2, 6, 10], 3)],
    [torch.tensor([3, 2])])
run("mha_2d_valid", MultiHeadAttention(8, 2, 0.5, True), [fx([2, 3, 8], 1), fx([2, 5, 8], 2), fx([2, 5, 8], 3)],
    [torch.tensor([[1, 2, 3], [5, 4, 2]])])
run("block", TransformerEncoderBlock(16, 32, 4, 0.5), [fx([2, 5, 16], 1)], [torch.tensor([3, 2])])
ids = ((torch.arange(12) * 7 + 3) % 20).reshape(2, 6)
run("encoder", TransformerEncoder(20, 8, 16, 2, 2, 0.5), [ids], [torch.tensor([3, 5])])

pe = PositionalEncoding(16, 0, 20)
out.append("  pos_encoding = { P = %s }," % lst(pe.P))
out.append("}")
print("\n".join(out))
