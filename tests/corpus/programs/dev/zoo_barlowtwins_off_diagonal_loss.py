"""Barlow Twins' loss: a batch-normalised cross-correlation matrix, in-place `div_`/`add_`/`pow_` on its diagonal view, and `off_diagonal` built from flatten/view/slicing on a shape-asserted square matrix (no break expected).

Source: facebookresearch/barlowtwins@8e8d284ca0bc02f88b92328e53f9b901e86b4a3c:main.py:180-221
Kept: off_diagonal verbatim (including `assert n == m`), BarlowTwins.__init__'s
projector built from `args.projector.split('-')`, forward's in-place ops and
`args.batch_size` / `args.lambd` plumbing.
Simplified: torchvision's resnet50 (fc = Identity, 2048 features) is a conv +
pool backbone with 16 features; `torch.distributed.all_reduce(c)` is dropped
(one process); projector '32-32-32', batch 4 of 3x8x8.
"""
import argparse

import torch
from torch import nn


def off_diagonal(x):
    # return a flattened view of the off-diagonal elements of a square matrix
    n, m = x.shape
    assert n == m
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


class Backbone(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width, 1000)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


class BarlowTwins(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.backbone = Backbone()
        self.backbone.fc = nn.Identity()

        # projector
        sizes = [16] + list(map(int, args.projector.split('-')))
        layers = []
        for i in range(len(sizes) - 2):
            layers.append(nn.Linear(sizes[i], sizes[i + 1], bias=False))
            layers.append(nn.BatchNorm1d(sizes[i + 1]))
            layers.append(nn.ReLU(inplace=True))
        layers.append(nn.Linear(sizes[-2], sizes[-1], bias=False))
        self.projector = nn.Sequential(*layers)

        # normalization layer for the representations z1 and z2
        self.bn = nn.BatchNorm1d(sizes[-1], affine=False)

    def forward(self, y1, y2):
        z1 = self.projector(self.backbone(y1))
        z2 = self.projector(self.backbone(y2))

        # empirical cross-correlation matrix
        c = self.bn(z1).T @ self.bn(z2)

        # sum the cross-correlation matrix between all gpus
        c.div_(self.args.batch_size)

        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        loss = on_diag + self.args.lambd * off_diag
        return loss


ARGS = argparse.Namespace(batch_size=4, lambd=0.0051, projector='32-32-32')


def main_worker(args=ARGS):
    model = BarlowTwins(args)
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    y1 = torch.randn(4, 3, 8, 8)
    y2 = torch.randn(4, 3, 8, 8)
    return BarlowTwins(ARGS), [(y1, y2), (y2, y1)]
