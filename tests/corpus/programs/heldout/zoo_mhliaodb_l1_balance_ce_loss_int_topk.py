"""DB (Differentiable Binarization) text detector loss: L1BalanceCELoss combines a balanced BCE with
hard-negative mining (`int(...)` counts feeding `torch.topk`), a masked L1 on the threshold map with a
`mask_sum.item() == 0` guard, and a Dice loss that asserts on a tensor.

Source: MhLiao/DB@65ca77a0bcfbd7114b916cf8a1e9ca85114286ce:decoders/seg_detector_loss.py:173-204,
decoders/balance_cross_entropy_loss.py:5-55, decoders/l1_loss.py:5-15, decoders/dice_loss.py:8-42
Kept: the three losses verbatim (`.byte()` masks, `int(positive.float().sum())`, `min(int(...), int(...))`,
`torch.topk(negative_loss.view(-1), negative_count)`, `mask_sum.item() == 0`, the shape asserts and
`assert loss <= 1`), L1BalanceCELoss's `'thresh' in pred` branch and metrics dict.
Simplified: the criterion is compiled on its own (SegDetectorModel wraps it in DataParallel); maps are
2x16x16; no SegDetectorLossBuilder.
"""
import torch
import torch.nn as nn


class BalanceCrossEntropyLoss(nn.Module):
    '''
    Balanced cross entropy loss.
    '''

    def __init__(self, negative_ratio=3.0, eps=1e-6):
        super(BalanceCrossEntropyLoss, self).__init__()
        self.negative_ratio = negative_ratio
        self.eps = eps

    def forward(self,
                pred: torch.Tensor,
                gt: torch.Tensor,
                mask: torch.Tensor,
                return_origin=False):
        positive = (gt * mask).byte()
        negative = ((1 - gt) * mask).byte()
        positive_count = int(positive.float().sum())
        negative_count = min(int(negative.float().sum()),
                            int(positive_count * self.negative_ratio))
        loss = nn.functional.binary_cross_entropy(
            pred, gt, reduction='none')[:, 0, :, :]
        positive_loss = loss * positive.float()
        negative_loss = loss * negative.float()
        negative_loss, _ = torch.topk(negative_loss.view(-1), negative_count)

        balance_loss = (positive_loss.sum() + negative_loss.sum()) /\
            (positive_count + negative_count + self.eps)

        if return_origin:
            return balance_loss, loss
        return balance_loss


class MaskL1Loss(nn.Module):
    def __init__(self):
        super(MaskL1Loss, self).__init__()

    def forward(self, pred: torch.Tensor, gt, mask):
        mask_sum = mask.sum()
        if mask_sum.item() == 0:
            return mask_sum, dict(l1_loss=mask_sum)
        else:
            loss = (torch.abs(pred[:, 0] - gt) * mask).sum() / mask_sum
            return loss, dict(l1_loss=loss)


class DiceLoss(nn.Module):
    '''
    Loss function from https://arxiv.org/abs/1707.03237,
    '''
    def __init__(self, eps=1e-6):
        super(DiceLoss, self).__init__()
        self.eps = eps

    def forward(self, pred: torch.Tensor, gt, mask, weights=None):
        assert pred.dim() == 4, pred.dim()
        return self._compute(pred, gt, mask, weights)

    def _compute(self, pred, gt, mask, weights):
        if pred.dim() == 4:
            pred = pred[:, 0, :, :]
            gt = gt[:, 0, :, :]
        assert pred.shape == gt.shape
        assert pred.shape == mask.shape
        if weights is not None:
            assert weights.shape == mask.shape
            mask = weights * mask

        intersection = (pred * gt * mask).sum()
        union = (pred * mask).sum() + (gt * mask).sum() + self.eps
        loss = 1 - 2.0 * intersection / union
        assert loss <= 1
        return loss


class L1BalanceCELoss(nn.Module):
    '''
    Balanced CrossEntropy Loss on `binary`,
    MaskL1Loss on `thresh`,
    DiceLoss on `thresh_binary`.
    '''

    def __init__(self, eps=1e-6, l1_scale=10, bce_scale=5):
        super(L1BalanceCELoss, self).__init__()
        self.dice_loss = DiceLoss(eps=eps)
        self.l1_loss = MaskL1Loss()
        self.bce_loss = BalanceCrossEntropyLoss()

        self.l1_scale = l1_scale
        self.bce_scale = bce_scale

    def forward(self, pred, batch):
        bce_loss = self.bce_loss(pred['binary'], batch['gt'], batch['mask'])
        metrics = dict(bce_loss=bce_loss)
        if 'thresh' in pred:
            l1_loss, l1_metric = self.l1_loss(pred['thresh'], batch['thresh_map'], batch['thresh_mask'])
            dice_loss = self.dice_loss(pred['thresh_binary'], batch['gt'], batch['mask'])
            metrics['thresh_loss'] = dice_loss
            loss = dice_loss + self.l1_scale * l1_loss + bce_loss * self.bce_scale
            metrics.update(**l1_metric)
        else:
            loss = bce_loss
        return loss, metrics


criterion = torch.compile(L1BalanceCELoss())


def _inputs(with_thresh=True, empty_thresh_mask=False):
    n, h, w = 2, 16, 16
    gt = (torch.rand(n, 1, h, w) > 0.8).float()
    mask = (torch.rand(n, h, w) > 0.1).float()
    pred = {'binary': torch.rand(n, 1, h, w).clamp(0.01, 0.99)}
    batch = {'gt': gt, 'mask': mask,
             'thresh_map': torch.rand(n, h, w) * 0.4 + 0.3,
             'thresh_mask': torch.zeros(n, h, w) if empty_thresh_mask else (torch.rand(n, h, w) > 0.5).float()}
    if with_thresh:
        pred['thresh'] = torch.rand(n, 1, h, w)
        pred['thresh_binary'] = torch.rand(n, 1, h, w)
    return pred, batch


def make():
    torch.manual_seed(0)
    return L1BalanceCELoss(), [_inputs(), _inputs(with_thresh=False), _inputs(empty_thresh_mask=True)]
