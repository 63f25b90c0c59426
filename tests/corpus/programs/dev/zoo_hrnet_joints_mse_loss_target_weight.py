"""HRNet pose heatmap loss: `JointsMSELoss` splits predicted and target heatmaps per joint with `reshape(...).split(1, 1)`, squeezes each, and accumulates `0.5 * MSE` over joints from a Python `loss = 0`, multiplying by `target_weight[:, idx]` when the `use_target_weight` config flag is set.

Source: leoxiaobin/deep-high-resolution-net.pytorch@2ad80f22b5b37fb296152bf5f6341885e8d9087c:lib/core/loss.py:15-39
Also: tools/train.py (criterion = JointsMSELoss(use_target_weight=cfg.LOSS.USE_TARGET_WEIGHT)),
lib/core/function.py (train(): `loss = criterion(output, target, target_weight)`).
Kept: JointsMSELoss verbatim; the config plumbing through a cfg.LOSS.USE_TARGET_WEIGHT lookup.
Simplified: the yacs config is a small namespace; 2 images, 17 joints, 16x12 heatmaps,
target_weight of shape [2, 17, 1] as the COCO dataset returns it.
"""
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

from types import SimpleNamespace

import torch
import torch.nn as nn


class JointsMSELoss(nn.Module):
    def __init__(self, use_target_weight):
        super(JointsMSELoss, self).__init__()
        self.criterion = nn.MSELoss(reduction='mean')
        self.use_target_weight = use_target_weight

    def forward(self, output, target, target_weight):
        batch_size = output.size(0)
        num_joints = output.size(1)
        heatmaps_pred = output.reshape((batch_size, num_joints, -1)).split(1, 1)
        heatmaps_gt = target.reshape((batch_size, num_joints, -1)).split(1, 1)
        loss = 0

        for idx in range(num_joints):
            heatmap_pred = heatmaps_pred[idx].squeeze()
            heatmap_gt = heatmaps_gt[idx].squeeze()
            if self.use_target_weight:
                loss += 0.5 * self.criterion(
                    heatmap_pred.mul(target_weight[:, idx]),
                    heatmap_gt.mul(target_weight[:, idx])
                )
            else:
                loss += 0.5 * self.criterion(heatmap_pred, heatmap_gt)

        return loss / num_joints


cfg = SimpleNamespace(LOSS=SimpleNamespace(USE_TARGET_WEIGHT=True, USE_OHKM=False))


def build_criterion():
    criterion = JointsMSELoss(
        use_target_weight=cfg.LOSS.USE_TARGET_WEIGHT
    )
    return torch.compile(criterion)


def make():
    torch.manual_seed(0)
    output = torch.rand(2, 17, 16, 12)
    target = torch.rand(2, 17, 16, 12)
    target_weight = (torch.rand(2, 17, 1) > 0.2).float()
    return JointsMSELoss(use_target_weight=cfg.LOSS.USE_TARGET_WEIGHT), [
        (output, target, target_weight),
    ]
