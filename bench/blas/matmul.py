# The other sides of bench/blas/run.sh, timed as bench/blas/matmul.lua:
# `blas` calls OpenBLAS directly (numpy.matmul on float32 is one
# cblas_sgemm into Debian's libblas.so.3, OpenBLAS, with its own threads);
# `pytorch` is torch.matmul with torch.set_num_threads(2).
import statistics, sys, time
side = sys.argv[1]
if side == "pytorch":
    import torch
    torch.set_num_threads(2)
    mk = lambda n: torch.randn(n, n)
    mm = torch.matmul
else:
    import numpy as np
    rng = np.random.default_rng(0)
    mk = lambda n: rng.standard_normal((n, n), dtype=np.float32)
    mm = np.matmul
for n, iters, reps in ((500, 50, 5), (2000, 1, 5)):
    a, b = mk(n), mk(n)
    for _ in range(max(iters, 4)):
        mm(a, b)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            mm(a, b)
        times.append((time.perf_counter() - t0) / iters)
    print("matmul_%d %.6g GFLOP/s" % (n, 2 * n ** 3 / statistics.median(times) / 1e9), flush=True)
