# bench/train/steps.py: PyTorch's side of bench/train/run.sh (the same
# networks, batches and loop as steps.lua); each figure is the better of 1
# and 2 threads (on a busy 2-core machine 2 threads often lose to 1).
import sys, time
import torch
from torch import nn

def lenet(relu):
    act = nn.ReLU if relu else nn.Sigmoid
    pool = nn.MaxPool2d if relu else nn.AvgPool2d
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), act(), pool(2, stride=2),
        nn.Conv2d(6, 16, 5), act(), pool(2, stride=2),
        nn.Flatten(), nn.Linear(16 * 5 * 5, 120), act(), nn.Linear(120, 84), act(), nn.Linear(84, 10))

class Residual(nn.Module):
    def __init__(self, cin, cout, use_1x1=False, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, stride=strides)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.conv3 = nn.Conv2d(cin, cout, 1, stride=strides) if use_1x1 else None
        self.bn1, self.bn2 = nn.BatchNorm2d(cout), nn.BatchNorm2d(cout)
    def forward(self, X):
        Y = torch.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3: X = self.conv3(X)
        return torch.relu(Y + X)

def resnet18(num_classes, in_channels=1):
    def block(cin, cout, n, first=False):
        blk = []
        for i in range(n):
            if i == 0 and not first: blk.append(Residual(cin, cout, use_1x1=True, strides=2))
            else: blk.append(Residual(cout, cout))
        return nn.Sequential(*blk)
    net = nn.Sequential(nn.Conv2d(in_channels, 64, 3, stride=1, padding=1), nn.BatchNorm2d(64), nn.ReLU())
    net.add_module("resnet_block1", block(64, 64, 2, first=True))
    net.add_module("resnet_block2", block(64, 128, 2))
    net.add_module("resnet_block3", block(128, 256, 2))
    net.add_module("resnet_block4", block(256, 512, 2))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(512, num_classes)))
    return net

def steps_per_sec(net, batch, hw, steps, rounds):
    torch.manual_seed(0)
    X, y = torch.randn(batch, 1, hw, hw), torch.randint(0, 10, (batch,))
    loss, opt = nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.01)
    def step():
        opt.zero_grad(); l = loss(net(X), y); l.backward(); opt.step()
    step(); step()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps): step()
        best = min(best, time.perf_counter() - t0)
    return batch * steps / best

def best_threads(fn):
    out = 0.0
    for t in (1, 2):
        torch.set_num_threads(t)
        out = max(out, fn())
    return out

which = sys.argv[1] if len(sys.argv) > 1 else "all"
if which in ("all", "lenet"):
    print("lenet_cpu", best_threads(lambda: steps_per_sec(lenet(True), 256, 28, 20, 3)), "examples/s")
if which in ("all", "resnet"):
    print("resnet18_cpu", best_threads(lambda: steps_per_sec(resnet18(10, 1), 64, 28, 3, 2)), "examples/s")
class RNNModel(nn.Module):
    # the book's concise model (9.6)
    def __init__(self, rnn_layer, vocab_size):
        super().__init__()
        self.rnn, self.vocab_size = rnn_layer, vocab_size
        self.linear = nn.Linear(rnn_layer.hidden_size, vocab_size)
    def forward(self, inputs, state):
        X = nn.functional.one_hot(inputs.T.long(), self.vocab_size).to(torch.float32)
        Y, state = self.rnn(X, state)
        return self.linear(Y.reshape((-1, Y.shape[-1]))), state

def grad_clipping(net, theta):
    params = [p for p in net.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
    if norm > theta:
        for param in params:
            param.grad[:] *= theta / norm

def lstm_tokens_per_sec():
    torch.manual_seed(0)
    V, B, T = 28, 32, 35
    net = RNNModel(nn.LSTM(V, 256), V)
    X, Y = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))
    y = Y.T.reshape(-1)
    loss, opt = nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=1)
    def step():
        state = (torch.zeros(1, B, 256), torch.zeros(1, B, 256))
        opt.zero_grad()
        y_hat, _ = net(X, state)
        loss(y_hat, y).mean().backward()
        grad_clipping(net, 1)
        opt.step()
    step(); step()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(5): step()
        best = min(best, time.perf_counter() - t0)
    return B * T * 5 / best

if which in ("all", "lstm"):
    print("lstm_cpu", best_threads(lstm_tokens_per_sec), "tokens/s")
if which in ("all", "epoch"):
    # torchvision only here: the other rows run without it
    import torchvision
    from torchvision import transforms
    root = sys.argv[2]
    ds = torchvision.datasets.FashionMNIST(root=root, train=True, transform=transforms.ToTensor(), download=False)
    def epoch():
        it = torch.utils.data.DataLoader(ds, 256, shuffle=True, num_workers=0)
        net = lenet(False)
        loss, opt = nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.9)
        n, t0 = 0, time.perf_counter()
        for X, y in it:
            opt.zero_grad(); l = loss(net(X), y); l.backward(); opt.step(); n += X.shape[0]
        return n / (time.perf_counter() - t0)
    print("lenet_epoch_cpu", best_threads(epoch), "examples/s")
