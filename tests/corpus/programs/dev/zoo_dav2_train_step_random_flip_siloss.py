"""Depth Anything V2 metric-depth training step: random horizontal flip decided by `random.random()`, forward, and SiLogLoss over a boolean valid mask (`target[valid_mask]`, `pred[valid_mask]`).

Source: DepthAnything/Depth-Anything-V2@2cbc36a8ce2cec41d38ee51153f112e87c8e42d8:metric_depth/train.py:122-133
Also: metric_depth/util/loss.py:1-16 (SiLogLoss verbatim) and the args defaults
(min_depth 0.001, max_depth 20) of metric_depth/train.py:32-33.
Kept: the body of the inner training loop up to the loss (flip of img/depth/
valid_mask with probability 0.5, `model(img)`, the `(valid_mask == 1) & (depth >=
args.min_depth) & (depth <= args.max_depth)` mask) in a `train_step` the user
compiles; backward/step/LR schedule stay outside.
Simplified: DepthAnythingV2 (DINOv2 + DPT head, `* max_depth` output) is a tiny
conv net with the same `(B, H, W)` sigmoid-times-max_depth output; no DDP/cuda.
"""
import random

import torch
from torch import nn


class SiLogLoss(nn.Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, pred, target, valid_mask):
        valid_mask = valid_mask.detach()
        diff_log = torch.log(target[valid_mask]) - torch.log(pred[valid_mask])
        loss = torch.sqrt(torch.pow(diff_log, 2).mean() -
                          self.lambd * torch.pow(diff_log.mean(), 2))

        return loss


class TinyMetricDepth(nn.Module):
    def __init__(self, max_depth=20.0):
        super().__init__()
        self.max_depth = max_depth
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(True), nn.Conv2d(8, 1, 3, padding=1))

    def forward(self, x):
        depth = self.net(x).sigmoid() * self.max_depth
        return depth.squeeze(1)


class Args:
    min_depth = 0.001
    max_depth = 20


args = Args()
model = TinyMetricDepth(max_depth=args.max_depth)
criterion = SiLogLoss()


@torch.compile
def train_step(img, depth, valid_mask):
    if random.random() < 0.5:
        img = img.flip(-1)
        depth = depth.flip(-1)
        valid_mask = valid_mask.flip(-1)

    pred = model(img)

    loss = criterion(pred, depth, (valid_mask == 1) & (depth >= args.min_depth) & (depth <= args.max_depth))
    return loss


def make():
    global model
    torch.manual_seed(0)
    model = TinyMetricDepth(max_depth=args.max_depth)
    model.train()
    img = torch.randn(2, 3, 16, 16)
    depth = torch.rand(2, 16, 16) * 25.0
    valid_mask = (torch.rand(2, 16, 16) > 0.2).to(torch.uint8)
    return train_step._torchdynamo_orig_callable, [(img, depth, valid_mask)] * 3
