# bench/data/fashion.py: the PyTorch side of the data-loading benchmark
# (bench/data/run.sh): torchvision's FashionMNIST + ToTensor + DataLoader,
# loading the training set and iterating one epoch of shuffled batches of
# 256, no model, with num_workers 0 and 2. torchvision reads the raw
# (decompressed) files from ROOT/FashionMNIST/raw, which run.sh prepares.
# Prints `name value unit` lines.
#   /usr/bin/python3 bench/data/fashion.py ROOT [ROUNDS]
import sys, time
import torch
import torchvision
from torchvision import transforms

torch.set_num_threads(2)
root = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1


def epoch(loader):
    n = 0
    for X, y in loader:
        n += X.shape[0]
    assert n == 60000, n


best = {}
for workers in (0, 2):
    for _ in range(rounds):
        t0 = time.perf_counter()
        ds = torchvision.datasets.FashionMNIST(root=root, train=True, transform=transforms.ToTensor(), download=False)
        t1 = time.perf_counter()
        torch.manual_seed(0)
        epoch(torch.utils.data.DataLoader(ds, batch_size=256, shuffle=True, num_workers=workers))
        t2 = time.perf_counter()
        for k, v in (("load", t1 - t0), ("epoch", t2 - t1), ("total", t2 - t0)):
            key = "%s_w%d" % (k, workers)
            best[key] = min(best.get(key, v), v)
for w in (0, 2):
    for k in ("load", "epoch", "total"):
        print("fmnist_%s_w%d %.4f s" % (k, w, best["%s_w%d" % (k, w)]))
total = min(best["total_w0"], best["total_w2"])
print("fmnist_total %.4f s" % total)
print("fmnist_load %.4f s" % (best["load_w0"] if best["total_w0"] <= best["total_w2"] else best["load_w2"]))
print("fmnist_epoch %.4f s" % (best["epoch_w0"] if best["total_w0"] <= best["total_w2"] else best["epoch_w2"]))
