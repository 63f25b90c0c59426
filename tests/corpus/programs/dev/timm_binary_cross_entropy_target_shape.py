"""timm BinaryCrossEntropy: batch-size assert, one-hot smoothing when target shape differs, optional threshold (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/loss/binary_cross_entropy.py:13-65
Kept: the constructor's smoothing/target_threshold/sum_classes options and
forward (assert on batch size, the target.shape != x.shape one-hot path with
scatter_, gt-threshold binarisation, BCE-with-logits with weight/pos_weight,
sum_classes).
Simplified: 4 classes.
"""
import torch
import torch.nn.functional as F
from torch import nn


class BinaryCrossEntropy(nn.Module):
    def __init__(self, smoothing=0.1, target_threshold=None, weight=None, reduction='mean', sum_classes=False, pos_weight=None):
        super().__init__()
        assert 0. <= smoothing < 1.0
        self.smoothing = smoothing
        self.target_threshold = target_threshold
        self.reduction = 'none' if sum_classes else reduction
        self.sum_classes = sum_classes
        self.register_buffer('weight', weight)
        self.register_buffer('pos_weight', pos_weight)

    def forward(self, x, target):
        batch_size = x.shape[0]
        assert batch_size == target.shape[0]
        if target.shape != x.shape:
            num_classes = x.shape[-1]
            off_value = self.smoothing / num_classes
            on_value = 1. - self.smoothing + off_value
            target = target.long().view(-1, 1)
            target = torch.full((batch_size, num_classes), off_value, device=x.device, dtype=x.dtype).scatter_(1, target, on_value)
        if self.target_threshold is not None:
            target = target.gt(self.target_threshold).to(dtype=target.dtype)
        loss = F.binary_cross_entropy_with_logits(x, target, self.weight, pos_weight=self.pos_weight, reduction=self.reduction)
        if self.sum_classes:
            loss = loss.sum(-1).mean()
        return loss


train_loss_fn = BinaryCrossEntropy(target_threshold=0.2, sum_classes=True)
train_loss_fn = torch.compile(train_loss_fn)


def make():
    torch.manual_seed(0)
    logits = torch.randn(3, 4)
    return BinaryCrossEntropy(target_threshold=0.2, sum_classes=True), [(logits, torch.tensor([0, 3, 1])), (logits, torch.rand(3, 4))]
