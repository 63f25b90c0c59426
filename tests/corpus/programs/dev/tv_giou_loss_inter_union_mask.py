"""torchvision generalized_box_iou_loss: `_loss_inter_union` writes `intsctk[mask] = (xkis2[mask] - ...)` with boolean-mask reads.

Source: pytorch/vision@v0.29.2:torchvision/ops/giou_loss.py:7-75; torchvision/ops/_utils.py:80-106
Kept: _upcast_non_float, _loss_inter_union (unbind, max/min corners, the
zeros_like intersection filled through a boolean mask), generalized_box_iou_loss
(enclosing box, the none/mean/sum reduction with the numel() > 0 guard and
the ValueError), as DETR-style and FCOS box losses call it.
Simplified: _log_api_usage_once is dropped; 4 box pairs.
"""
import torch
from torch import Tensor


def _upcast_non_float(t: Tensor) -> Tensor:
    if t.dtype not in (torch.float32, torch.float64):
        return t.float()
    return t


def _loss_inter_union(boxes1, boxes2):
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    xkis1 = torch.max(x1, x1g)
    ykis1 = torch.max(y1, y1g)
    xkis2 = torch.min(x2, x2g)
    ykis2 = torch.min(y2, y2g)
    intsctk = torch.zeros_like(x1)
    mask = (ykis2 > ykis1) & (xkis2 > xkis1)
    intsctk[mask] = (xkis2[mask] - xkis1[mask]) * (ykis2[mask] - ykis1[mask])
    unionk = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - intsctk
    return intsctk, unionk


def generalized_box_iou_loss(boxes1, boxes2, reduction: str = "none", eps: float = 1e-7):
    boxes1 = _upcast_non_float(boxes1)
    boxes2 = _upcast_non_float(boxes2)
    intsctk, unionk = _loss_inter_union(boxes1, boxes2)
    iouk = intsctk / (unionk + eps)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    xc1 = torch.min(x1, x1g)
    yc1 = torch.min(y1, y1g)
    xc2 = torch.max(x2, x2g)
    yc2 = torch.max(y2, y2g)
    area_c = (xc2 - xc1) * (yc2 - yc1)
    miouk = iouk - ((area_c - unionk) / (area_c + eps))
    loss = 1 - miouk
    if reduction == "none":
        pass
    elif reduction == "mean":
        loss = loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    elif reduction == "sum":
        loss = loss.sum()
    else:
        raise ValueError(f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction modes: 'none', 'mean', 'sum'")
    return loss


@torch.compile
def box_loss(pred_boxes, target_boxes):
    return generalized_box_iou_loss(pred_boxes, target_boxes, reduction="mean")


def make():
    pred = torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 3.0], [0.0, 0.0, 1.0, 1.0], [2.0, 2.0, 4.0, 5.0]])
    target = torch.tensor([[1.0, 1.0, 3.0, 3.0], [5.0, 5.0, 6.0, 6.0], [0.0, 0.0, 1.0, 1.0], [2.0, 3.0, 4.0, 4.0]])
    return box_loss._torchdynamo_orig_callable, [(pred, target)]
