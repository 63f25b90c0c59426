"""torchvision distance_box_iou_loss: API-usage logging guard, upcast, `_loss_inter_union` boolean-mask fill, center-distance penalty, reduction switch with the `numel() > 0` mean guard.

Source: pytorch/vision@ae5c34625d15e766ef51eb7602ceebf901c3f55b:torchvision/ops/diou_loss.py:9-88
Kept: distance_box_iou_loss (the `not torch.jit.is_scripting() and not
torch.jit.is_tracing()` guard around _log_api_usage_once, _upcast_non_float,
`loss, _ = _diou_iou_loss(...)`, the mean/sum reduction with the empty-input
fallback), _diou_iou_loss (enclosing box, squared diagonal and center
distances), and the helpers it imports from torchvision/ops/_utils.py
(_loss_inter_union with `intsctk[mask] = ...`, _upcast_non_float) and
torchvision/utils.py (_log_api_usage_once).
Simplified: the compiled entry is a small box-regression loss function
taking the reduction as an argument; 4 box pairs (one pair disjoint), plus
an empty set.
"""
from types import FunctionType
from typing import Tuple

import torch
from torch import Tensor


def _log_api_usage_once(obj) -> None:
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    if isinstance(obj, FunctionType):
        name = obj.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def _upcast_non_float(t: Tensor) -> Tensor:
    # Protects from numerical overflows in multiplications by upcasting to the equivalent higher type
    if t.dtype not in (torch.float32, torch.float64):
        return t.float()
    return t


def _loss_inter_union(
    boxes1: torch.Tensor,
    boxes2: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor]:

    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)

    # Intersection keypoints
    xkis1 = torch.max(x1, x1g)
    ykis1 = torch.max(y1, y1g)
    xkis2 = torch.min(x2, x2g)
    ykis2 = torch.min(y2, y2g)

    intsctk = torch.zeros_like(x1)
    mask = (ykis2 > ykis1) & (xkis2 > xkis1)
    intsctk[mask] = (xkis2[mask] - xkis1[mask]) * (ykis2[mask] - ykis1[mask])
    unionk = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - intsctk

    return intsctk, unionk


def distance_box_iou_loss(
    boxes1: torch.Tensor,
    boxes2: torch.Tensor,
    reduction: str = "none",
    eps: float = 1e-7,
) -> torch.Tensor:
    # Original Implementation from https://github.com/facebookresearch/detectron2/blob/main/detectron2/layers/losses.py

    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        _log_api_usage_once(distance_box_iou_loss)

    boxes1 = _upcast_non_float(boxes1)
    boxes2 = _upcast_non_float(boxes2)

    loss, _ = _diou_iou_loss(boxes1, boxes2, eps)

    if reduction == "mean":
        loss = loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    elif reduction == "sum":
        loss = loss.sum()
    return loss


def _diou_iou_loss(
    boxes1: torch.Tensor,
    boxes2: torch.Tensor,
    eps: float = 1e-7,
) -> Tuple[torch.Tensor, torch.Tensor]:

    intsct, union = _loss_inter_union(boxes1, boxes2)
    iou = intsct / (union + eps)
    # smallest enclosing box
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    xc1 = torch.min(x1, x1g)
    yc1 = torch.min(y1, y1g)
    xc2 = torch.max(x2, x2g)
    yc2 = torch.max(y2, y2g)
    # The diagonal distance of the smallest enclosing box squared
    diagonal_distance_squared = ((xc2 - xc1) ** 2) + ((yc2 - yc1) ** 2) + eps
    # centers of boxes
    x_p = (x2 + x1) / 2
    y_p = (y2 + y1) / 2
    x_g = (x1g + x2g) / 2
    y_g = (y1g + y2g) / 2
    # The distance between boxes' centers squared.
    centers_distance_squared = ((x_p - x_g) ** 2) + ((y_p - y_g) ** 2)
    # The distance IoU is the IoU penalized by a normalized
    # distance between boxes' centers squared.
    loss = 1 - iou + (centers_distance_squared / diagonal_distance_squared)
    return loss, iou


def box_regression_loss(pred_boxes, target_boxes, reduction):
    return distance_box_iou_loss(pred_boxes, target_boxes, reduction=reduction)


compiled_box_loss = torch.compile(box_regression_loss, dynamic=False)


def make():
    pred = torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 3.0], [0.0, 0.0, 1.0, 1.0], [2.0, 2.0, 4.0, 5.0]])
    target = torch.tensor([[1.0, 1.0, 3.0, 3.0], [5.0, 5.0, 6.0, 6.0], [0.0, 0.0, 1.0, 1.0], [2.0, 3.0, 4.0, 4.0]])
    empty = torch.zeros(0, 4)
    return box_regression_loss, [(pred, target, "mean"), (pred, target, "sum"), (pred, target, "none"), (empty, empty, "mean")]
