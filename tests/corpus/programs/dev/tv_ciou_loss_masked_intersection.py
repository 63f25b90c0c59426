"""torchvision complete_box_iou_loss: boolean-mask intersection assignment, no_grad alpha, reduction switch.

Source: pytorch/vision@1a2d6ab734292079180b10aed6951055fd9fded9:torchvision/ops/ciou_loss.py:7-94
Kept: the `not torch.jit.is_scripting() and not torch.jit.is_tracing()` usage
log, _upcast of both box sets, unbind into coordinates, the masked
`intsct[mask] = ...` intersection, enclosing-box diagonal, center distance,
the atan aspect term, `with torch.no_grad()` alpha, and the reduction branches
including `loss.numel() > 0` for "mean".
Simplified: _upcast (from giou_loss.py) and _log_api_usage_once (from
torchvision/utils.py) are inlined as the small helpers they are; the loss is
the training criterion of a tiny box-regression head.
"""
import torch
from torch import nn


def _log_api_usage_once(obj) -> None:
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    if callable(obj):
        name = obj.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def _upcast(t: torch.Tensor) -> torch.Tensor:
    # Protects from numerical overflows in multiplications by upcasting to the equivalent higher type
    if t.is_floating_point():
        return t if t.dtype in (torch.float32, torch.float64) else t.float()
    else:
        return t if t.dtype in (torch.int32, torch.int64) else t.int()


def complete_box_iou_loss(
    boxes1: torch.Tensor,
    boxes2: torch.Tensor,
    reduction: str = "none",
    eps: float = 1e-7,
) -> torch.Tensor:
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        _log_api_usage_once(complete_box_iou_loss)

    boxes1 = _upcast(boxes1)
    boxes2 = _upcast(boxes2)

    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)

    # Intersection keypoints
    xkis1 = torch.max(x1, x1g)
    ykis1 = torch.max(y1, y1g)
    xkis2 = torch.min(x2, x2g)
    ykis2 = torch.min(y2, y2g)

    intsct = torch.zeros_like(x1)
    mask = (ykis2 > ykis1) & (xkis2 > xkis1)
    intsct[mask] = (xkis2[mask] - xkis1[mask]) * (ykis2[mask] - ykis1[mask])
    union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - intsct + eps
    iou = intsct / union

    # smallest enclosing box
    xc1 = torch.min(x1, x1g)
    yc1 = torch.min(y1, y1g)
    xc2 = torch.max(x2, x2g)
    yc2 = torch.max(y2, y2g)
    diag_len = ((xc2 - xc1) ** 2) + ((yc2 - yc1) ** 2) + eps

    # centers of boxes
    x_p = (x2 + x1) / 2
    y_p = (y2 + y1) / 2
    x_g = (x1g + x2g) / 2
    y_g = (y1g + y2g) / 2
    distance = ((x_p - x_g) ** 2) + ((y_p - y_g) ** 2)

    # width and height of boxes
    w_pred = x2 - x1
    h_pred = y2 - y1
    w_gt = x2g - x1g
    h_gt = y2g - y1g
    v = (4 / (torch.pi ** 2)) * torch.pow((torch.atan(w_gt / h_gt) - torch.atan(w_pred / h_pred)), 2)
    with torch.no_grad():
        alpha = v / (1 - iou + v + eps)

    loss = 1 - iou + (distance / diag_len) + alpha * v
    if reduction == "mean":
        loss = loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    elif reduction == "sum":
        loss = loss.sum()

    return loss


class BoxRegressionCriterion(nn.Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reg = nn.Linear(6, 4)
        self.reduction = reduction

    def forward(self, feats, anchors, gt_boxes, reduction=None):
        deltas = self.reg(feats)
        pred = anchors + deltas
        # keep x1 < x2, y1 < y2 as the loss expects
        pred = torch.cat([pred[..., :2], pred[..., :2] + pred[..., 2:].abs() + 0.1], dim=-1)
        return complete_box_iou_loss(pred, gt_boxes, reduction=reduction or self.reduction)


criterion = torch.compile(BoxRegressionCriterion())


def _boxes(n, off):
    xy = torch.rand(n, 2) * 4 + off
    wh = torch.rand(n, 2) * 3 + 0.5
    return torch.cat([xy, xy + wh], dim=-1)


def make():
    torch.manual_seed(0)
    feats = torch.randn(5, 6)
    anchors = _boxes(5, 0.0)
    gt = _boxes(5, 0.0)
    # second set: ground truth far away -> no overlap anywhere (mask all False)
    far = _boxes(5, 50.0)
    return BoxRegressionCriterion(), [
        (feats, anchors, gt),
        (feats, anchors, far),
        (feats[:0], anchors[:0], gt[:0]),
        (feats, anchors, gt, "sum"),
        (feats, anchors, gt, "none"),
    ]
