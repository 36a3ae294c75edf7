#!/usr/bin/env python3
"""Goldens for spec/d2l_spec.lua's d2l.resnet18 case: the multi-GPU chapter's
ResNet-18 (d2l's resnet18(10, 1), written out below as the book has it) in
PyTorch 1.13, every parameter filled by the same formula the spec uses
(parameter k, element j: 0.05 * sin(k + 0.37 * j), in named_parameters
order), eval mode, on a fixed input; prints the parameter count, the
shapes and the logits as a Lua table. Run with /usr/bin/python3."""
import math
import torch
from torch import nn
from torch.nn import functional as F


class Residual(nn.Module):
    def __init__(self, input_channels, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2d(input_channels, num_channels, kernel_size=3, padding=1, stride=strides)
        self.conv2 = nn.Conv2d(num_channels, num_channels, kernel_size=3, padding=1)
        self.conv3 = nn.Conv2d(input_channels, num_channels, kernel_size=1, stride=strides) if use_1x1conv else None
        self.bn1 = nn.BatchNorm2d(num_channels)
        self.bn2 = nn.BatchNorm2d(num_channels)

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)


def resnet18(num_classes, in_channels=1):
    def resnet_block(in_channels, out_channels, num_residuals, first_block=False):
        blk = []
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.append(Residual(in_channels, out_channels, use_1x1conv=True, strides=2))
            else:
                blk.append(Residual(out_channels, out_channels))
        return nn.Sequential(*blk)
    net = nn.Sequential(nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1),
                        nn.BatchNorm2d(64), nn.ReLU())
    net.add_module("resnet_block1", resnet_block(64, 64, 2, first_block=True))
    net.add_module("resnet_block2", resnet_block(64, 128, 2))
    net.add_module("resnet_block3", resnet_block(128, 256, 2))
    net.add_module("resnet_block4", resnet_block(256, 512, 2))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(512, num_classes)))
    return net


def fill(t, k):
    n = t.numel()
    vals = torch.tensor([0.05 * math.sin(k + 0.37 * j) for j in range(n)], dtype=torch.float64)
    t.copy_(vals.reshape(t.shape))


torch.set_default_dtype(torch.float64)
net = resnet18(10, 1)
with torch.no_grad():
    for k, (_, p) in enumerate(net.named_parameters()):
        fill(p, k + 1)
net.eval()
X = torch.tensor([math.cos(0.11 * j) for j in range(2 * 28 * 28)]).reshape(2, 1, 28, 28)
with torch.no_grad():
    y = net(X)
shapes = [list(p.shape) for p in net.parameters()]
print("return {")
print("  count = %d, nparams = %d," % (sum(p.numel() for p in net.parameters()), len(shapes)))
print("  shapes = {" + ", ".join("{" + ", ".join(map(str, s)) + "}" for s in shapes) + "},")
print("  logits = {" + ", ".join("{" + ", ".join("%.17g" % v for v in row) + "}" for row in y.tolist()) + "},")
print("}")
