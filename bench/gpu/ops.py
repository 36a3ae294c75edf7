# bench/gpu/ops.py: PyTorch's side of the GPU benchmarks (bench/gpu/ops.lua
# is gshell's: same work, same order, same timing). Run on a GPU machine:
#   python3 bench/gpu/ops.py [cuda:N]
import sys
import time

import torch

dev = sys.argv[1] if len(sys.argv) > 1 else "cuda:0"
if not torch.cuda.is_available():
    sys.stderr.write("bench/gpu/ops.py: no CUDA device\n")
    sys.exit(2)


def timeit(fn, iters):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def report(name, value, unit):
    print("%s %.4g %s" % (name, value, unit), flush=True)


def gbps(name, nbytes, fn, iters):
    report(name, nbytes / timeit(fn, iters) / 1e9, "GB/s")


torch.manual_seed(0)
N = 64 * 1024 * 1024
a = torch.randn(N, device=dev)
b = torch.randn(N, device=dev)
gbps("copy_d2d_256MiB", 2 * 4 * N, lambda: a.clone(), 20)
gbps("add_64M_f32", 3 * 4 * N, lambda: a + b, 20)
gbps("mul_scalar_64M_f32", 2 * 4 * N, lambda: a * 2, 20)
gbps("exp_64M_f32", 2 * 4 * N, lambda: a.exp(), 20)
ah = a.half()
gbps("half_to_float_64M", (2 + 4) * N, lambda: ah.float(), 20)
gbps("sum_64M_f32", 4 * N, lambda: a.sum(), 20)
m = a.reshape(8192, 8192)
gbps("sum_rows_8192x8192", 4 * N, lambda: m.sum(1), 20)
gbps("sum_cols_8192x8192", 4 * N, lambda: m.sum(0), 20)
few = torch.randn(1 << 20, 16, device=dev)
gbps("sum_cols_1Mx16", 4 * 16 * (1 << 20), lambda: few.sum(0), 50)
gbps("softmax_rows_8192x8192", 2 * 4 * N, lambda: m.softmax(1), 10)
gbps("mt_transpose_copy_8192x8192", 2 * 4 * N, lambda: m.t().contiguous(), 10)
del a, b, ah, m, few

for dt in (torch.float32, torch.bfloat16):
    n = 8192
    x = torch.randn(n, n, device=dev).to(dt)
    y = torch.randn(n, n, device=dev).to(dt)
    s = timeit(lambda: x.mm(y), 5)
    report("matmul_8192_" + str(dt).replace("torch.", ""), 2 * n**3 / s / 1e12, "TFLOP/s")
    del x, y

# convolution: the same layer as bench/gpu/ops.lua's conv row (cuDNN here)
x = torch.randn(64, 64, 56, 56, device=dev, requires_grad=True)
w = torch.randn(64, 64, 3, 3, device=dev, requires_grad=True)
bias = torch.randn(64, device=dev, requires_grad=True)
gy = torch.randn(64, 64, 56, 56, device=dev)


def conv_step():
    x.grad = w.grad = bias.grad = None
    torch.nn.functional.conv2d(x, w, bias, padding=1).backward(gy)


report("conv3x3_64_56x56_b64_fwd_bwd", 3 * 2 * 64 * 64 * 576 * 3136 / timeit(conv_step, 5) / 1e12, "TFLOP/s")
del x, w, bias, gy

t1, t2 = torch.ones(1, device=dev), torch.ones(1, device=dev)
report("launch_tiny_add", timeit(lambda: t1 + t2, 10000) * 1e6, "us")
h = torch.randn(N)
gbps("h2d_256MiB", 4 * N, lambda: h.to(dev), 5)
g = h.to(dev)
gbps("d2h_256MiB", 4 * N, lambda: g.cpu(), 5)
