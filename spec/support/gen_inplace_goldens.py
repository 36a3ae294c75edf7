#!/usr/bin/python3
"""Prints spec/support/inplace_goldens.lua: PyTorch's (Debian's
python3-torch, 1.13) gradients through in-place ops inside autograd, and
its refusals, which spec/inplace_autograd_spec.lua checks gshell against
(the spec holds the gshell translation of each case). Regenerate with

    /usr/bin/python3 spec/support/gen_inplace_goldens.py > spec/support/inplace_goldens.lua

Inputs: x = [0.5, -1.25, 2.0, 0.75] (requires grad) and the weights
w = [1, -2, 3, 0.5] that the loss (y * w).sum() uses, in float64.
"""
import torch

torch.set_default_dtype(torch.float64)
X = [0.5, -1.25, 2.0, 0.75]
W = torch.tensor([1.0, -2.0, 3.0, 0.5])
out = ["-- Written by spec/support/gen_inplace_goldens.py (Debian's python3-torch %s); do not edit." % torch.__version__,
       "return {"]


def lst(v):
    return "{" + ", ".join(repr(float(a)) for a in v) + "}"


def grads(name, f, *names):
    x = torch.tensor(X, requires_grad=True)
    extra = f(x)
    fields = ["x = " + lst(x.grad)]
    for n, t in zip(names, extra):
        fields.append("%s = %s" % (n, lst(t.grad.reshape(-1))))
    out.append("  [%r] = { %s }," % (name, ", ".join(fields)))


def refusal(name, f):
    try:
        f()
        raise SystemExit("%s: PyTorch did not refuse" % name)
    except RuntimeError as e:
        msg = str(e).split(" Hint:")[0]
        out.append("  [%r] = { message = %r }," % (name, msg))


def add_(x):  # the ResNet section's Y += X with Y a non-leaf
    y = x * x
    y += x
    (y * W).sum().backward()
    return ()


def mul_tensor(x):  # y.mul_(v): v's gradient is y's value before the write
    v = torch.tensor([2.0, 3.0, -1.0, 0.5], requires_grad=True)
    y = x * 1
    y.mul_(v)
    (y * W).sum().backward()
    return (v,)


def exp_(x):  # the result is saved and the write is the last one: accepted
    y = x * 2
    y.exp_()
    (y * W).sum().backward()
    return ()


def view_mul_(x):  # a write into a view of a non-leaf: CopySlices
    y = x * 2
    v = y[1:3]
    v.mul_(3)
    (y * W).sum().backward()
    return ()


def masked_fill_(x):
    y = x * 2
    y.masked_fill_(torch.tensor([True, False, True, False]), -1.0)
    (y * W).sum().backward()
    return ()


def mask_assign(x):
    y = x * 2
    y[torch.tensor([False, True, True, False])] = 5.0
    (y * W).sum().backward()
    return ()


def index_assign(x):  # the conv-layer exercise: Y[i, j] = (X[...] * K).sum()
    K = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    Xi = torch.arange(9.0).reshape(3, 3) + x.detach()[0]
    Y = torch.zeros(2, 2)
    for i in range(2):
        for j in range(2):
            Y[i, j] = (Xi[i:i + 2, j:j + 2] * K).sum()
    (Y * torch.tensor([[1.0, 2.0], [3.0, 4.0]]) + x.sum()).sum().backward()
    return (K,)


def copy_slice(x):  # y[2:3] = x[0:2] * 3 with y a non-leaf
    y = x * x
    y[1:3] = x[0:2] * 3
    (y * W).sum().backward()
    return ()


def stale_view(x):  # a view taken before its base was written: its grad_fn is regenerated
    y = x * 2
    v = y[1:3]
    y.mul_(3)
    (v * W[0:2]).sum().backward()
    return ()


def view_joins(x):  # a view of a tensor outside the graph that joins it afterwards
    Y = torch.zeros(4)
    v = Y[0:2]
    Y[1] = x[0] * 5
    (v * W[0:2] + x[3]).sum().backward()
    return ()


def unsaved_input(x):  # exp saves its result, mul by a number and div by a number nothing:
    h = x * 1              # writing h afterwards is allowed
    y = h.exp() + h * 2 + h / 4
    h.add_(1)
    (y * W).sum().backward()
    return ()


for name, f, names in [("add_", add_, ()), ("mul_ tensor", mul_tensor, ("v",)), ("exp_", exp_, ()),
                       ("view mul_", view_mul_, ()), ("masked_fill_", masked_fill_, ()),
                       ("mask assign", mask_assign, ()), ("index assign", index_assign, ("K",)),
                       ("copy into slice", copy_slice, ()), ("stale view", stale_view, ()),
                       ("view of a base that joins the graph", view_joins, ()),
                       ("a write PyTorch allows: nothing saved it", unsaved_input, ())]:
    grads(name, f, *names)


def saved_result():
    x = torch.tensor(X[:3], requires_grad=True, dtype=torch.float32)
    y = x.exp()
    y.mul_(2)
    y.sum().backward()


def saved_input():
    w = torch.ones(3, dtype=torch.float32)
    x = torch.tensor(X[:3], requires_grad=True, dtype=torch.float32)
    y = x * w
    w.add_(1)
    y.sum().backward()


def saved_double_view():
    x = torch.tensor(X, requires_grad=True)
    y = x.exp()
    y[1:3].mul_(3)
    y.sum().backward()


def saved_by_log():
    x = torch.tensor(X, requires_grad=True)
    h = x * 1
    y = (h * h).log()
    h2 = h * h
    y = h2.log()
    h2.add_(1)
    y.sum().backward()


def leaf():
    torch.tensor(X, requires_grad=True).add_(1)


def leaf_view():
    x = torch.tensor(X, requires_grad=True)
    x[0] = 1


for name, f in [("saved result", saved_result), ("saved input", saved_input),
                ("saved, written through a view", saved_double_view),
                ("saved input of log", saved_by_log), ("leaf", leaf), ("view of a leaf", leaf_view)]:
    refusal(name, f)
out.append("}")
print("\n".join(out))
