"""PyTorch side of the gshell benchmarks: the same work as bench/lua/ops.lua.

Prints one `name value unit` line per benchmark (see bench/README.md).
Run with Debian's interpreter: /usr/bin/python3 bench/py/ops.py
"""
import gc
import statistics
import sys
import time

import torch

torch.set_num_threads(2)
clock = time.perf_counter


def time_per_iter(fn, iters, reps=5, warmup=2):
    """Median over `reps` repetitions of the mean time of one call of fn."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = clock()
        for _ in range(iters):
            fn()
        times.append((clock() - t0) / iters)
    return statistics.median(times)


def report(name, value, unit):
    print(f"{name} {value:.6g} {unit}", flush=True)


# `ops.py memory`: only the memory-bound 16M rows (bench/run.sh runs them
# in extra short rounds, alternating sides, as the machine's bandwidth
# drifts by up to 1.7x from one minute to the next).
ONLY_MEMORY = len(sys.argv) > 1 and sys.argv[1] == "memory"


def run(name, unit, f):
    if ONLY_MEMORY and not name.endswith("_16M"):
        return
    gc.collect()  # as the Lua side does before each benchmark
    try:
        report(name, f(), unit)
    except Exception as e:  # keep going: one broken benchmark is one "n/a"
        print(f"{name} nan {unit}", flush=True)
        print(f"# {name} failed: {e}", file=sys.stderr)


# -- per-op overhead: a + b on 4-element float tensors --------------------
def tiny_add():
    a, b = torch.ones(4), torch.ones(4)
    n = 100_000

    def loop():
        for _ in range(n):
            c = a + b  # noqa: F841

    return time_per_iter(loop, 1, reps=5, warmup=1) / n * 1e6


run("add_tiny", "us/op", tiny_add)


# -- matmul GFLOP/s ----------------------------------------------------------
# Warm-up: at least 4 products, so that both sides are timed in their
# steady state (a process's first products write their results into fresh
# memory; see bench/README.md).
def matmul(n, iters, reps):
    def f():
        a, b = torch.randn(n, n), torch.randn(n, n)
        t = time_per_iter(lambda: torch.matmul(a, b), iters, reps, warmup=max(iters, 4))
        return 2 * n**3 / t / 1e9
    return f


run("matmul_500", "GFLOP/s", matmul(500, 50, 5))
run("matmul_2000", "GFLOP/s", matmul(2000, 1, 5))

# -- 16M float32 memory-bound ops: GB/s counting bytes read + written --------
N = 16 * 1024 * 1024
F = 4  # bytes per float32
x, y = torch.randn(N), torch.randn(N)


def gbps(nbytes, fn, iters=10):
    return lambda: nbytes / time_per_iter(fn, iters) / 1e9


run("copy_16M", "GB/s", gbps(2 * N * F, lambda: y.copy_(x)))
run("add_16M", "GB/s", gbps(3 * N * F, lambda: x + y))
run("exp_16M", "GB/s", gbps(2 * N * F, lambda: x.exp()))
run("sum_16M", "GB/s", gbps(N * F, lambda: x.sum()))
run("max_16M", "GB/s", gbps(N * F, lambda: x.max()))
m = x.view(4096, 4096)
run("sum_rows_16M", "GB/s", gbps(N * F, lambda: m.sum(1)))
run("sum_cols_16M", "GB/s", gbps(N * F, lambda: m.sum(0)))
del x, y, m


# -- MLP training step: 784-256-10, batch 256, SGD ---------------------------
def mlp():
    nn = torch.nn
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    lossf = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    X, y = torch.randn(256, 784), torch.randint(0, 10, (256,))

    def step():
        opt.zero_grad()
        loss = lossf(net(X), y)
        loss.backward()
        opt.step()

    return 1 / time_per_iter(step, 20, reps=5, warmup=3)


run("mlp_step", "steps/s", mlp)


# convolution layers, forward + backward: the same work as bench/lua/ops.lua's
# conv rows. PyTorch's better of 1 and 2 threads counts (on a busy 2-core
# machine its 2-thread OpenMP often loses to one thread).
def conv_layer(n, cin, cout, hw, k, pad):
    def f():
        torch.manual_seed(0)
        x = torch.randn(n, cin, hw, hw, requires_grad=True)
        w = torch.randn(cout, cin, k, k, requires_grad=True)
        b = torch.randn(cout, requires_grad=True)
        out = hw + 2 * pad - k + 1
        gy = torch.randn(n, cout, out, out)

        def step():
            x.grad = w.grad = b.grad = None
            torch.nn.functional.conv2d(x, w, b, padding=pad).backward(gy)

        best = None
        for threads in (1, 2):
            torch.set_num_threads(threads)
            t = time_per_iter(step, 3, reps=5, warmup=2)
            best = t if best is None else min(best, t)
        torch.set_num_threads(2)
        return 3 * 2 * n * cout * cin * k * k * out * out / best / 1e9
    return f


run("conv_lenet1", "GFLOP/s", conv_layer(256, 1, 6, 28, 5, 2))
run("conv_lenet2", "GFLOP/s", conv_layer(256, 6, 16, 14, 5, 0))
run("conv_res28", "GFLOP/s", conv_layer(32, 64, 64, 28, 3, 1))
run("conv_res56", "GFLOP/s", conv_layer(8, 64, 64, 56, 3, 1))
