"""torchvision sigmoid_focal_loss: string reduction switch and `if alpha >= 0` on a float (no break).

Source: pytorch/vision@v0.29.2:torchvision/ops/focal_loss.py:7-61
Kept: the reduction validation, BCE-with-logits, p_t, the alpha weighting and
the none/mean/sum tail; RetinaNet-style use with a mean over anchors.
Simplified: _log_api_usage_once dropped.
"""
import torch
import torch.nn.functional as F


def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2, reduction: str = "none"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction modes: 'none', 'mean', 'sum'")
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "none":
        pass
    elif reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return loss


@torch.compile(backend="inductor")
def classification_loss(cls_logits, gt_classes_target, num_foreground):
    return sigmoid_focal_loss(cls_logits, gt_classes_target, reduction="sum") / max(1, num_foreground)


def make():
    torch.manual_seed(0)
    logits = torch.randn(10, 3)
    target = (torch.rand(10, 3) > 0.7).float()
    return classification_loss._torchdynamo_orig_callable, [(logits, target, 3), (logits, target, 0)]
