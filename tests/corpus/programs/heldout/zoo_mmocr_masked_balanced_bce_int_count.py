"""MMOCR's DBNet loss: MaskedBalancedBCELoss turns the positive/negative pixel counts into Python ints (`int(positive.sum())`), branches on `positive_count == 0`, feeds the int to `torch.topk`, and asserts on `pred.max() <= 1`.

Source: open-mmlab/mmocr@966296f26ac34cf0e96d40ab4a0a94c9a697909a:mmocr/models/common/losses/bce_loss.py:11-142
Also: mmocr/models/textdet/module_losses/db_module_loss.py:64-95 (DBModuleLoss.forward),
mmocr/models/common/losses/l1_loss.py:17-70 (MaskedSmoothL1Loss),
mmocr/models/common/losses/dice_loss.py:11-58 (MaskedDiceLoss).
Kept: MaskedBalancedBCEWithLogitsLoss.forward and the MaskedBalancedBCELoss
subclass that asserts on the prediction range and calls super().forward,
the three masked losses wired as DBModuleLoss builds them, its weights and
results dict.
Simplified: the MODELS registry is replaced by direct construction; the
targets arrive as tensors (get_targets draws polygons with cv2/shapely);
MaskedSmoothL1Loss keeps only its torch>1.6 path (the digit_version check
needs mmengine/packaging); maps are 1x8x8.
"""
from typing import Dict, Optional, Tuple, Union

import torch
import torch.nn as nn
from torch import Tensor


class MaskedBalancedBCEWithLogitsLoss(nn.Module):
    def __init__(self,
                 reduction: str = 'none',
                 negative_ratio: Union[float, int] = 3,
                 fallback_negative_num: int = 0,
                 eps: float = 1e-6) -> None:
        super().__init__()
        assert reduction in ['none', 'mean', 'sum']
        assert isinstance(negative_ratio, (float, int))
        assert isinstance(fallback_negative_num, int)
        assert isinstance(eps, float)
        self.eps = eps
        self.negative_ratio = negative_ratio
        self.reduction = reduction
        self.fallback_negative_num = fallback_negative_num
        self.loss = nn.BCEWithLogitsLoss(reduction=reduction)

    def forward(self,
                pred: torch.Tensor,
                gt: torch.Tensor,
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        assert pred.size() == gt.size() and gt.numel() > 0
        if mask is None:
            mask = torch.ones_like(gt)
        assert mask.size() == gt.size()

        positive = (gt * mask).float()
        negative = ((1 - gt) * mask).float()
        positive_count = int(positive.sum())
        if positive_count == 0:
            negative_count = min(
                int(negative.sum()), self.fallback_negative_num)
        else:
            negative_count = min(
                int(negative.sum()), int(positive_count * self.negative_ratio))

        assert gt.max() <= 1 and gt.min() >= 0
        loss = self.loss(pred, gt)
        positive_loss = loss * positive
        negative_loss = loss * negative

        negative_loss, _ = torch.topk(negative_loss.view(-1), negative_count)

        balance_loss = (positive_loss.sum() + negative_loss.sum()) / (
            positive_count + negative_count + self.eps)

        return balance_loss


class MaskedBalancedBCELoss(MaskedBalancedBCEWithLogitsLoss):
    def __init__(self,
                 reduction: str = 'none',
                 negative_ratio: Union[float, int] = 3,
                 fallback_negative_num: int = 0,
                 eps: float = 1e-6) -> None:
        super().__init__()
        assert reduction in ['none', 'mean', 'sum']
        assert isinstance(negative_ratio, (float, int))
        assert isinstance(fallback_negative_num, int)
        assert isinstance(eps, float)
        self.eps = eps
        self.negative_ratio = negative_ratio
        self.reduction = reduction
        self.fallback_negative_num = fallback_negative_num
        self.loss = nn.BCELoss(reduction=reduction)

    def forward(self,
                pred: torch.Tensor,
                gt: torch.Tensor,
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        assert pred.max() <= 1 and pred.min() >= 0
        return super().forward(pred, gt, mask)


class MaskedSmoothL1Loss(nn.Module):
    def __init__(self, beta: Union[float, int] = 1, eps: float = 1e-6) -> None:
        super().__init__()
        if beta == 0:
            beta = beta + eps
        self.smooth_l1_loss = nn.SmoothL1Loss(beta=beta, reduction='none')
        self.eps = eps
        self.beta = beta

    def forward(self,
                pred: torch.Tensor,
                gt: torch.Tensor,
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        assert pred.size() == gt.size() and gt.numel() > 0
        if mask is None:
            mask = torch.ones_like(gt).bool()
        assert mask.size() == gt.size()
        x = pred * mask
        y = gt * mask
        loss = self.smooth_l1_loss(x, y)
        return loss.sum() / (mask.sum() + self.eps)


class MaskedDiceLoss(nn.Module):
    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        assert isinstance(eps, float)
        self.eps = eps

    def forward(self,
                pred: torch.Tensor,
                gt: torch.Tensor,
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        assert pred.size() == gt.size() and gt.numel() > 0
        if mask is None:
            mask = torch.ones_like(gt)
        assert mask.size() == gt.size()

        pred = pred.contiguous().view(pred.size(0), -1)
        gt = gt.contiguous().view(gt.size(0), -1)

        mask = mask.contiguous().view(mask.size(0), -1)
        pred = pred * mask
        gt = gt * mask

        dice_coeff = (2 * (pred * gt).sum()) / (
            pred.sum() + gt.sum() + self.eps)

        return 1 - dice_coeff


class DBModuleLoss(nn.Module):
    def __init__(self,
                 weight_prob: float = 5.,
                 weight_thr: float = 10.,
                 shrink_ratio: float = 0.4,
                 thr_min: float = 0.3,
                 thr_max: float = 0.7,
                 min_sidelength: Union[int, float] = 8) -> None:
        super().__init__()
        self.loss_prob = MaskedBalancedBCELoss()
        self.loss_thr = MaskedSmoothL1Loss(beta=0)
        self.loss_db = MaskedDiceLoss()
        self.weight_prob = weight_prob
        self.weight_thr = weight_thr
        self.shrink_ratio = shrink_ratio
        self.thr_min = thr_min
        self.thr_max = thr_max
        self.min_sidelength = min_sidelength

    def forward(self, preds: Tuple[Tensor, Tensor, Tensor],
                targets: Tuple[Tensor, Tensor, Tensor, Tensor]) -> Dict:
        prob_map, thr_map, binary_map = preds
        gt_shrinks, gt_shrink_masks, gt_thrs, gt_thr_masks = targets
        gt_shrinks = gt_shrinks.to(prob_map.device)
        gt_shrink_masks = gt_shrink_masks.to(prob_map.device)
        gt_thrs = gt_thrs.to(thr_map.device)
        gt_thr_masks = gt_thr_masks.to(thr_map.device)
        loss_prob = self.loss_prob(prob_map, gt_shrinks, gt_shrink_masks)

        loss_thr = self.loss_thr(thr_map, gt_thrs, gt_thr_masks)
        loss_db = self.loss_db(binary_map, gt_shrinks, gt_shrink_masks)

        results = dict(
            loss_prob=self.weight_prob * loss_prob,
            loss_thr=self.weight_thr * loss_thr,
            loss_db=loss_db)

        return results


criterion = torch.compile(DBModuleLoss())


def make():
    torch.manual_seed(0)
    preds = (torch.rand(1, 8, 8), torch.rand(1, 8, 8), torch.rand(1, 8, 8))
    gt_shrink = torch.zeros(1, 8, 8)
    gt_shrink[:, 2:4, 3:6] = 1.0
    shrink_mask = torch.ones(1, 8, 8)
    shrink_mask[:, 7, :] = 0.0
    gt_thr = torch.rand(1, 8, 8) * 0.4 + 0.3
    thr_mask = (torch.rand(1, 8, 8) > 0.5).float()
    with_text = (gt_shrink, shrink_mask, gt_thr, thr_mask)
    no_text = (torch.zeros(1, 8, 8), shrink_mask, gt_thr, thr_mask)
    return DBModuleLoss(), [(preds, with_text), (preds, no_text)]
