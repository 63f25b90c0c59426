"""OWL-ViT / DETR generalized_box_iou: `if not (boxes[:, 2:] >= boxes[:, :2]).all(): raise ValueError(f"...{boxes}")`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/owlvit/modeling_owlvit.py:104-168
Kept: _upcast, box_area, box_iou returning (iou, union), generalized_box_iou
with both corner-format checks (tensor conditions, f-string messages that
format the tensor) and the enclosing-box term; used in a box loss as OWL-ViT's
image-guided detection and the DETR losses do.
Simplified: the loss is 1 - giou diagonal mean; 3 boxes.
"""
import torch
from torch import Tensor


def _upcast(t: Tensor) -> Tensor:
    if t.is_floating_point():
        return t if t.dtype in (torch.float32, torch.float64) else t.float()
    else:
        return t if t.dtype in (torch.int32, torch.int64) else t.int()


def box_area(boxes: Tensor) -> Tensor:
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    left_top = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    right_bottom = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    width_height = (right_bottom - left_top).clamp(min=0)
    inter = width_height[:, :, 0] * width_height[:, :, 1]
    union = area1[:, None] + area2 - inter
    iou = inter / union
    return iou, union


def generalized_box_iou(boxes1, boxes2):
    if not (boxes1[:, 2:] >= boxes1[:, :2]).all():
        raise ValueError(f"boxes1 must be in [x0, y0, x1, y1] (corner) format, but got {boxes1}")
    if not (boxes2[:, 2:] >= boxes2[:, :2]).all():
        raise ValueError(f"boxes2 must be in [x0, y0, x1, y1] (corner) format, but got {boxes2}")
    iou, union = box_iou(boxes1, boxes2)
    top_left = torch.min(boxes1[:, None, :2], boxes2[:, :2])
    bottom_right = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
    width_height = (bottom_right - top_left).clamp(min=0)
    area = width_height[:, :, 0] * width_height[:, :, 1]
    return iou - (area - union) / area


@torch.compile
def giou_loss(pred_boxes, target_boxes):
    return (1 - torch.diag(generalized_box_iou(pred_boxes, target_boxes))).mean()


RAISING_INPUTS = {1: "ValueError"}


def make():
    pred = torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 4.0], [0.5, 0.5, 1.0, 1.5]])
    target = torch.tensor([[0.1, 0.0, 2.0, 2.5], [1.0, 1.5, 3.0, 3.0], [0.0, 0.0, 1.0, 1.0]])
    bad = target.clone()
    bad[1, 2] = 0.0
    return giou_loss._torchdynamo_orig_callable, [(pred, target), (pred, bad)]
