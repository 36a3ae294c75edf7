"""bench/py/pool_norm.py: bench/lua/pool_norm.lua's work in PyTorch
(max_pool2d and batch_norm forward + backward). Usage:
    /usr/bin/python3 bench/py/pool_norm.py THREADS
One `name ms/iter ms` line per case: the median of 7 repetitions."""
import sys
import time
import torch
import torch.nn.functional as F

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)


def time_it(name, iters, fn):
    for _ in range(2):
        fn()
    t = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        t.append((time.perf_counter() - t0) / iters * 1000)
    t.sort()
    print("%s %.4f ms" % (name, t[3]))


def pool_case(name, shape, k, iters, **opts):
    torch.manual_seed(0)
    x = torch.randn(*shape).requires_grad_()
    g = [None]

    def step():
        x.grad = None
        y = F.max_pool2d(x, k, **opts)
        if g[0] is None:
            g[0] = torch.randn(y.shape)
        y.backward(g[0])
    time_it(name, iters, step)


def bn_case(name, shape, iters):
    torch.manual_seed(0)
    c = shape[1]
    x = torch.randn(*shape).requires_grad_()
    w, b = torch.ones(c).requires_grad_(), torch.zeros(c).requires_grad_()
    rm, rv = torch.zeros(c), torch.ones(c)
    g = torch.randn(*shape)

    def step():
        x.grad = w.grad = b.grad = None
        y = F.batch_norm(x, rm, rv, w, b, training=True)
        y.backward(g)
    time_it(name, iters, step)


pool_case("maxpool_lenet1_256x6x28x28_k2", (256, 6, 28, 28), 2, 10)
pool_case("maxpool_lenet2_256x16x10x10_k2", (256, 16, 10, 10), 2, 20)
pool_case("maxpool_resnet_64x64x28x28_k3s2p1", (64, 64, 28, 28), 3, 10, stride=2, padding=1)
bn_case("bn_lenet_256x6x28x28", (256, 6, 28, 28), 10)
bn_case("bn_lenet_256x120", (256, 120), 50)
bn_case("bn_resnet_64x64x28x28", (64, 64, 28, 28), 10)
bn_case("bn_resnet_64x128x7x7", (64, 128, 7, 7), 30)
