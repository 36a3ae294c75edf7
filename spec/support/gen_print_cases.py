#!/usr/bin/python3
"""Generates spec/print_spec.lua: each case builds a tensor in gshell's Lua
API and expects exactly the repr that real PyTorch prints for the same
tensor built in Python. Run with Debian's python3-torch (PyTorch 1.13):

    /usr/bin/python3 spec/support/gen_print_cases.py > spec/print_spec.lua

A case is (title, Lua code, Python expression[, feature]). The Lua code is
an expression, or statements ending in `return`. A case naming a feature
(autograd, nn, detach) is pending while gshell lacks that feature, so the
suite stays green while those parts are being built and the cases start
counting as soon as they land. Cases marked DEVICE need
CUDA devices (simulated ones do); the machine that generates the spec may
have none, so their expected text is assembled by PyTorch's own printing
helpers from the CPU tensor plus the device suffix, exactly as repr does
for a CUDA tensor.
"""
import math
import torch
import torch._tensor_str as ts

nan, inf = float("nan"), float("inf")
I64MAX, I64MIN = 2**63 - 1, -2**63

CASES = [
    # the examples of API.md
    ("float vector", "torch.tensor({1.5, -2.25, 3.0})", "torch.tensor([1.5, -2.25, 3.0])"),
    ("tiny values in scientific notation", "torch.tensor({4.0046e-11, 6.4097e-10, 8.1546e-33})",
     "torch.tensor([4.0046e-11, 6.4097e-10, 8.1546e-33])"),
    ("summarised int vector", "torch.arange(2000)", "torch.arange(2000)"),
    # integral floats, fixed and scientific styles
    ("ones 2x3", "torch.ones(2, 3)", "torch.ones(2, 3)"),
    ("ones float64", "torch.ones(2, 3, {dtype = torch.float64})", "torch.ones(2, 3, dtype=torch.float64)"),
    ("zeros", "torch.zeros(3)", "torch.zeros(3)"),
    ("zeros float64 2x2", "torch.zeros(2, 2, {dtype = torch.float64})", "torch.zeros(2, 2, dtype=torch.float64)"),
    ("eye", "torch.eye(3)", "torch.eye(3)"),
    ("int matrix", "torch.tensor({{1, 2}, {3, 4}})", "torch.tensor([[1, 2], [3, 4]])"),
    ("small and one", "torch.tensor({1e-5, 1.0})", "torch.tensor([1e-5, 1.0])"),
    ("ratio exactly 1000 stays fixed", "torch.tensor({1.0, 1000.0})", "torch.tensor([1.0, 1000.0])"),
    ("ratio above 1000 goes scientific", "torch.tensor({1.0, 1001.0})", "torch.tensor([1.0, 1001.0])"),
    ("non-integral ratio above 1000", "torch.tensor({0.5, 1000.0})", "torch.tensor([0.5, 1000.0])"),
    ("integral above 1e8", "torch.tensor({1.0, 1e9})", "torch.tensor([1.0, 1e9])"),
    ("0.0001 is not below the limit", "torch.tensor({1e-4, 0.5}, {dtype = torch.float64})",
     "torch.tensor([1e-4, 0.5], dtype=torch.float64)"),
    ("just below 0.0001", "torch.tensor({9.9e-5, 0.05}, {dtype = torch.float64})",
     "torch.tensor([9.9e-5, 0.05], dtype=torch.float64)"),
    ("mixed signs scientific", "torch.tensor({-1e-5, 1e5})", "torch.tensor([-1e-5, 1e5])"),
    ("negative zero", "torch.tensor({-0.0, 1.0})", "torch.tensor([-0.0, 1.0])"),
    ("negative zero fixed", "torch.tensor({-0.0, 0.5})", "torch.tensor([-0.0, 0.5])"),
    ("thirds float64", "torch.tensor({1/3, 2/3, -1/3}, {dtype = torch.float64})",
     "torch.tensor([1/3, 2/3, -1/3], dtype=torch.float64)"),
    ("round half to even", "torch.tensor({1.03125, 2.5, 0.71875}, {dtype = torch.float64})",
     "torch.tensor([1.03125, 2.5, 0.71875], dtype=torch.float64)"),
    ("huge float64", "torch.tensor({1e308, -1e300, 5.0}, {dtype = torch.float64})",
     "torch.tensor([1e308, -1e300, 5.0], dtype=torch.float64)"),
    ("float32 extremes", "torch.tensor({3e38, -1e-38})", "torch.tensor([3e38, -1e-38])"),
    ("division by 7", "torch.arange(12):view(3, 4):float() / 7", "torch.arange(12).view(3, 4).float() / 7"),
    ("linspace", "torch.linspace(0, 1, 5)", "torch.linspace(0, 1, 5)"),
    ("full float", "torch.full({2, 2}, 7.5)", "torch.full((2, 2), 7.5)"),
    ("full int", "torch.full({2, 2}, 7)", "torch.full((2, 2), 7)"),
    # nonfinite
    ("nan and infinities", "torch.tensor({0.0/0.0, 1/0, -1/0})", "torch.tensor([nan, inf, -inf])"),
    ("nan beside integral", "torch.tensor({0.0/0.0, 1.0})", "torch.tensor([nan, 1.0])"),
    ("inf beside fixed", "torch.tensor({1/0, -1/0, 1.5})", "torch.tensor([inf, -inf, 1.5])"),
    ("nan beside scientific", "torch.tensor({0.0/0.0, 1e-5, 1.0})", "torch.tensor([nan, 1e-5, 1.0])"),
    ("nan matrix", "torch.tensor({{0.0/0.0, 1/0}, {-1/0, 0.0}})", "torch.tensor([[nan, inf], [-inf, 0.0]])"),
    # 0-d
    ("scalar float", "torch.tensor(3.5)", "torch.tensor(3.5)"),
    ("scalar integral float", "torch.tensor(3.0)", "torch.tensor(3.0)"),
    ("scalar int", "torch.tensor(5)", "torch.tensor(5)"),
    ("scalar negative", "torch.tensor(-0.25)", "torch.tensor(-0.25)"),
    ("scalar tiny", "torch.tensor(1e-20)", "torch.tensor(1e-20)"),
    ("scalar big", "torch.tensor(1e10)", "torch.tensor(1e10)"),
    ("scalar nan", "torch.tensor(0.0/0.0)", "torch.tensor(nan)"),
    ("scalar bool", "torch.tensor(1):eq(1)", "torch.tensor(1).eq(1)"),
    ("scalar float64", "torch.tensor(2.5, {dtype = torch.float64})", "torch.tensor(2.5, dtype=torch.float64)"),
    ("mean", "torch.tensor({1.0, 2.0, 3.0, 4.0}):mean()", "torch.tensor([1.0, 2.0, 3.0, 4.0]).mean()"),
    # empty
    ("empty from table", "torch.tensor({})", "torch.tensor([])"),
    ("empty 0x3", "torch.zeros(0, 3)", "torch.zeros(0, 3)"),
    ("empty int64", "torch.zeros(0, {dtype = torch.int64})", "torch.zeros(0, dtype=torch.int64)"),
    ("empty bool 3-d", "torch.zeros(2, 0, 3, {dtype = torch.bool})", "torch.zeros(2, 0, 3, dtype=torch.bool)"),
    ("empty float16", "torch.zeros(0, {dtype = torch.float16})", "torch.zeros(0, dtype=torch.float16)"),
    # bool and integer dtypes
    ("bool from comparison", "torch.tensor({1, 2}):gt(1)", "torch.tensor([1, 2]).gt(1)"),
    ("bool matrix", "torch.eye(3):bool()", "torch.eye(3).bool()"),
    ("bool wrapped", "torch.arange(30):gt(15)", "torch.arange(30).gt(15)"),
    ("negative ints", "torch.tensor({-1, 10, -100})", "torch.tensor([-1, 10, -100])"),
    ("int64 extremes", "torch.tensor({math.maxinteger, math.mininteger, 0})", f"torch.tensor([{I64MAX}, {I64MIN}, 0])"),
    ("int64 extremes wrapped", "torch.full({2, 5}, math.mininteger)", f"torch.full((2, 5), {I64MIN})"),
    ("int8", "torch.tensor({1, -2, 127}, {dtype = torch.int8})", "torch.tensor([1, -2, 127], dtype=torch.int8)"),
    ("int16", "torch.tensor({{300, -32768}, {5, 6}}, {dtype = torch.int16})",
     "torch.tensor([[300, -32768], [5, 6]], dtype=torch.int16)"),
    ("int32 via :int()", "torch.arange(5):int()", "torch.arange(5).int()"),
    ("uint8", "torch.tensor({0, 255, 17}, {dtype = torch.uint8})", "torch.tensor([0, 255, 17], dtype=torch.uint8)"),
    ("uint8 wrapped with dtype", "torch.arange(256):to(torch.uint8)", "torch.arange(256).to(torch.uint8)"),
    ("int32 row that pushes the dtype onto a new line", "torch.arange(70):int()", "torch.arange(70).int()"),
    ("int32 row whose dtype still fits", "torch.arange(62):int()", "torch.arange(62).int()"),
    # half precision
    ("float16", "torch.tensor({1, 2}, {dtype = torch.float16})", "torch.tensor([1, 2], dtype=torch.float16)"),
    ("float16 rounding", "torch.tensor({0.1, 3.14159, -2.5}, {dtype = torch.float16})",
     "torch.tensor([0.1, 3.14159, -2.5], dtype=torch.float16)"),
    ("float16 scientific", "torch.tensor({1e-3, 60000.0}, {dtype = torch.float16})",
     "torch.tensor([1e-3, 60000.0], dtype=torch.float16)"),
    ("bfloat16", "torch.tensor({1.5, 3.14159, 1e10}, {dtype = torch.bfloat16})",
     "torch.tensor([1.5, 3.14159, 1e10], dtype=torch.bfloat16)"),
    ("half()", "torch.arange(6):view(2, 3):half()", "torch.arange(6).view(2, 3).half()"),
    # nesting and wrapping
    ("3-d", "torch.arange(24):view(2, 3, 4)", "torch.arange(24).view(2, 3, 4)"),
    ("4-d float64", "torch.arange(16):view(2, 2, 2, 2):double()", "torch.arange(16).view(2, 2, 2, 2).double()"),
    ("5-d ones", "torch.ones(1, 1, 1, 1, 1)", "torch.ones(1, 1, 1, 1, 1)"),
    ("long float row wraps", "torch.arange(30):float() / 7", "torch.arange(30).float() / 7"),
    ("long int row wraps", "torch.arange(100)", "torch.arange(100)"),
    ("wrapped rows of a matrix", "torch.arange(60):view(2, 30):double() * 1.5",
     "torch.arange(60).view(2, 30).double() * 1.5"),
    ("1000 elements are not summarised", "torch.arange(1000):view(10, 100)", "torch.arange(1000).view(10, 100)"),
    ("negative matrix", "torch.arange(12):view(3, 4):float() - 5.5", "torch.arange(12).view(3, 4).float() - 5.5"),
    # views
    ("transposed view", "torch.arange(6):view(2, 3):t()", "torch.arange(6).view(2, 3).t()"),
    ("narrowed view", "torch.arange(10)[{{3, 6}}]", "torch.arange(10)[2:6]"),
    ("selected row", "torch.arange(12):view(3, 4)[2]", "torch.arange(12).view(3, 4)[1]"),
    ("column of a matrix", "torch.arange(12):view(3, 4)[{{}, 2}]", "torch.arange(12).view(3, 4)[:, 1]"),
    # summarisation
    ("summarised transposed view", "torch.arange(2000):view(40, 50):t()", "torch.arange(2000).view(40, 50).t()"),
    ("huge expanded view", "torch.tensor({1.5, -2.0}):view(2, 1):expand(2, 100000000000)",
     "torch.tensor([1.5, -2.0]).view(2, 1).expand(2, 100000000000)"),
    ("1001 elements", "torch.arange(1001)", "torch.arange(1001)"),
    ("summarised 1000x1000", "torch.arange(0, 1e6):float():view(1000, 1000)",
     "torch.arange(0, 1e6).float().view(1000, 1000)"),
    ("summarised 2-d ints", "torch.arange(2000):view(40, 50)", "torch.arange(2000).view(40, 50)"),
    ("summarised 2-d floats", "torch.arange(10000):float():view(100, 100) / 7",
     "torch.arange(10000).float().view(100, 100) / 7"),
    ("summarised with few rows", "torch.arange(2002):view(2, 1001)", "torch.arange(2002).view(2, 1001)"),
    ("summarised column", "torch.arange(1500):view(1500, 1)", "torch.arange(1500).view(1500, 1)"),
    ("summarised rows of two", "torch.zeros(1001, 2)", "torch.zeros(1001, 2)"),
    ("summarised 3-d", "torch.arange(3000):view(10, 20, 15)", "torch.arange(3000).view(10, 20, 15)"),
    ("summarised cube", "torch.arange(8000):view(20, 20, 20):double()", "torch.arange(8000).view(20, 20, 20).double()"),
    ("summarised 4-d", "torch.arange(7 * 7 * 7 * 7):view(7, 7, 7, 7)", "torch.arange(7 * 7 * 7 * 7).view(7, 7, 7, 7)"),
    ("summarised with a nan", "local x = torch.arange(2000):float() / 4\n      x[{1}] = 0.0/0.0\n      return x",
     "(lambda x: (x.__setitem__(0, nan), x)[1])(torch.arange(2000).float() / 4)"),
    ("only displayed values choose the style",
     "local x = torch.ones(2000)\n      x[{1000}] = 1e-9\n      return x",
     "(lambda x: (x.__setitem__(999, 1e-9), x)[1])(torch.ones(2000))"),
    # autograd
    ("requires_grad", "torch.ones(2, 2, {requires_grad = true})", "torch.ones(2, 2, requires_grad=True)"),
    ("requires_grad wraps", "torch.ones(20, {requires_grad = true})", "torch.ones(20, requires_grad=True)"),
    ("requires_grad float64", "torch.ones(3, {dtype = torch.float64, requires_grad = true})",
     "torch.ones(3, dtype=torch.float64, requires_grad=True)"),
    ("grad_fn of mul", "torch.ones(2, {requires_grad = true}) * 2", "torch.ones(2, requires_grad=True) * 2", "autograd"),
    ("grad_fn of add", "local a = torch.ones(3, {requires_grad = true})\n      return a + a",
     "(lambda a: a + a)(torch.ones(3, requires_grad=True))", "autograd"),
    ("grad_fn of sum", "torch.ones(2, 3, {requires_grad = true}):sum()", "torch.ones(2, 3, requires_grad=True).sum()", "autograd"),
    ("detach drops requires_grad", "torch.ones(2, {requires_grad = true}):detach()",
     "torch.ones(2, requires_grad=True).detach()", "detach"),
    ("parameter", "local lin = torch.nn.Linear(3, 2)\n      lin.weight.data:fill_(0.5)\n      return lin.weight",
     "(lambda l: (l.weight.data.fill_(0.5), l.weight)[1])(torch.nn.Linear(3, 2))", "nn"),
    ("parameter bias", "local lin = torch.nn.Linear(3, 2)\n      lin.bias.data:fill_(-1.0)\n      return lin.bias",
     "(lambda l: (l.bias.data.fill_(-1.0), l.bias)[1])(torch.nn.Linear(3, 2))", "nn"),
]

# (title, Lua code, Python expression of the CPU tensor, device name)
DEVICE_CASES = [
    ("cuda ones", "torch.ones(2, 3, {device = 'cuda:0'})", "torch.ones(2, 3)", "cuda:0"),
    ("cuda float64 with requires_grad",
     "torch.ones(3, {device = 'cuda:0', dtype = torch.float64, requires_grad = true})",
     "torch.ones(3, dtype=torch.float64, requires_grad=True)", "cuda:0"),
    ("cuda int32 row: suffixes wrap", "torch.arange(70):int():cuda()", "torch.arange(70).int()", "cuda:0"),
    ("cuda summarised", "torch.arange(2000):cuda()", "torch.arange(2000)", "cuda:0"),
]


MISSING = """-- Why a case that needs `feature` cannot run yet, or nil when it can.
local function missing(feature)
  if feature == "nn" then
    return torch.nn == nil and "torch.nn is not available yet" or nil
  elseif feature == "autograd" then
    local ok, y = pcall(function() return torch.ones(1, {requires_grad = true}) * 2 end)
    return (not ok or y.grad_fn == nil) and "autograd does not record grad_fn yet" or nil
  elseif feature == "detach" then
    local ok, f = pcall(function() return torch.ones(1).detach end)
    return (not ok or f == nil) and "Tensor:detach is not available yet" or nil
  end
end
"""


def device_repr(t, dev):
    """repr of t as if it lived on dev, built by PyTorch's own helpers."""
    suffixes = ["device='%s'" % dev]
    if t.dtype not in (torch.float32, torch.int64, torch.bool):
        suffixes.append("dtype=" + str(t.dtype))
    if t.grad_fn is not None:
        suffixes.append("grad_fn=<%s>" % type(t.grad_fn).__name__)
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    with torch.no_grad():
        body = ts._tensor_str(t, len("tensor("))
    return ts._add_suffixes("tensor(" + body, suffixes, len("tensor("), False)


def long_string(s):
    level = 1
    while "]" + "=" * level + "]" in s:
        level += 1
    return "[" + "=" * level + "[" + s + "]" + "=" * level + "]"


def lua_body(code):
    return code if "return" in code else "return " + code


def lua_title(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    out = []
    w = out.append
    w("-- Generated by spec/support/gen_print_cases.py from the repr that real PyTorch")
    w("-- (Debian's python3-torch, 1.13) prints for the same tensors. Regenerate with")
    w("--   /usr/bin/python3 spec/support/gen_print_cases.py > spec/print_spec.lua")
    w('local torch = require("torch")')
    w("")
    w(MISSING)
    w("local function check(expected, build)")
    w("  assert.are.equal(expected, tostring(build()))")
    w("end")
    w("")
    w('describe("tensor printing matches PyTorch", function()')
    for case in CASES:
        title, lua, py = case[:3]
        expected = repr(eval(py))
        w("  it(%s, function()" % lua_title(title))
        if len(case) > 3:
            w('    local why = missing("%s")' % case[3])
            w("    if why then return pending(why) end")
        w("    check(%s, function()" % long_string(expected))
        w("      %s" % lua_body(lua))
        w("    end)")
        w("  end)")
    w("end)")
    w("")
    w('describe("tensor printing on CUDA devices (real or simulated)", function()')
    w('  local H = require("helpers")')
    w("  setup(function() assert(H.gpus(1)) end) -- simulated when the machine has none")
    w("  teardown(function() H.release_gpus() end)")
    for title, lua, py, dev in DEVICE_CASES:
        expected = device_repr(eval(py), dev)
        w("  it(%s, function()" % lua_title(title))
        w("    check(%s, function()" % long_string(expected))
        w("      %s" % lua_body(lua))
        w("    end)")
        w("  end)")
    w("end)")
    print("\n".join(out))


if __name__ == "__main__":
    main()
