"""HRNet online hard keypoint mining loss: `JointsOHKMMSELoss` collects per-joint unreduced MSE in a list, means and concatenates them, then `ohkm` loops over the batch taking `torch.topk(..., sorted=False)` per sample, gathers, and accumulates into a Python float `ohkm_loss = 0.` divided by `loss.size()[0]`.

Source: leoxiaobin/deep-high-resolution-net.pytorch@2ad80f22b5b37fb296152bf5f6341885e8d9087c:lib/core/loss.py:42-87
Also: tools/train.py (the criterion choice on cfg.LOSS.USE_OHKM).
Kept: JointsOHKMMSELoss verbatim (ohkm and forward); the use_target_weight flag from the config.
Simplified: the yacs config is a small namespace; topk 8 of 17 joints, 2 images,
16x12 heatmaps, target_weight [2, 17, 1].
"""
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

from types import SimpleNamespace

import torch
import torch.nn as nn


class JointsOHKMMSELoss(nn.Module):
    def __init__(self, use_target_weight, topk=8):
        super(JointsOHKMMSELoss, self).__init__()
        self.criterion = nn.MSELoss(reduction='none')
        self.use_target_weight = use_target_weight
        self.topk = topk

    def ohkm(self, loss):
        ohkm_loss = 0.
        for i in range(loss.size()[0]):
            sub_loss = loss[i]
            topk_val, topk_idx = torch.topk(
                sub_loss, k=self.topk, dim=0, sorted=False
            )
            tmp_loss = torch.gather(sub_loss, 0, topk_idx)
            ohkm_loss += torch.sum(tmp_loss) / self.topk
        ohkm_loss /= loss.size()[0]
        return ohkm_loss

    def forward(self, output, target, target_weight):
        batch_size = output.size(0)
        num_joints = output.size(1)
        heatmaps_pred = output.reshape((batch_size, num_joints, -1)).split(1, 1)
        heatmaps_gt = target.reshape((batch_size, num_joints, -1)).split(1, 1)

        loss = []
        for idx in range(num_joints):
            heatmap_pred = heatmaps_pred[idx].squeeze()
            heatmap_gt = heatmaps_gt[idx].squeeze()
            if self.use_target_weight:
                loss.append(0.5 * self.criterion(
                    heatmap_pred.mul(target_weight[:, idx]),
                    heatmap_gt.mul(target_weight[:, idx])
                ))
            else:
                loss.append(
                    0.5 * self.criterion(heatmap_pred, heatmap_gt)
                )

        loss = [l.mean(dim=1).unsqueeze(dim=1) for l in loss]
        loss = torch.cat(loss, dim=1)

        return self.ohkm(loss)


cfg = SimpleNamespace(LOSS=SimpleNamespace(USE_TARGET_WEIGHT=True, USE_OHKM=True, TOPK=8))


def build_criterion():
    if cfg.LOSS.USE_OHKM:
        criterion = JointsOHKMMSELoss(
            use_target_weight=cfg.LOSS.USE_TARGET_WEIGHT, topk=cfg.LOSS.TOPK
        )
    return torch.compile(criterion, dynamic=False)


def make():
    torch.manual_seed(0)
    output = torch.rand(2, 17, 16, 12)
    target = torch.rand(2, 17, 16, 12)
    target_weight = (torch.rand(2, 17, 1) > 0.2).float()
    return JointsOHKMMSELoss(use_target_weight=cfg.LOSS.USE_TARGET_WEIGHT, topk=cfg.LOSS.TOPK), [
        (output, target, target_weight),
    ]
