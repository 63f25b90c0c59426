"""super-gradients PPYoloELoss._yolox_targets_to_ppyolo: flat (image, class, cx, cy, w, h) targets are split per image with boolean-mask reads `gt_class[mask]`, the padding length comes from `max(max_boxes, mask.sum().item())`, then F.pad + stack.

Source: Deci-AI/super-gradients@03415969b538d8d2696eeb8baa47c68b6b1391ec:src/super_gradients/training/losses/ppyolo_loss.py:560-640
Also: src/super_gradients/training/datasets/data_formats/bbox_formats/cxcywh.py (cxcywh_to_xyxy).
Kept: PPYoloELoss.__init__'s proj_conv buffer and attributes, _yolox_targets_to_ppyolo
verbatim (its @torch.no_grad(), both loops, the pad tuple), cxcywh_to_xyxy with its
tensor/numpy return.
Simplified: no @register_loss; the assigners and GIoU loss objects built in
__init__ are left out because the conversion does not use them.
"""
from typing import Mapping, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def cxcywh_to_xyxy(bboxes, image_shape: Optional[Tuple[int, int]]):
    """
    Transforms bboxes from CX-CY-W-H format to XYXY format
    :param bboxes: BBoxes of shape (..., 4) in CX-CY-W-H format
    :return: BBoxes of shape (..., 4) in XYXY format
    """
    cx, cy, w, h = bboxes[..., 0], bboxes[..., 1], bboxes[..., 2], bboxes[..., 3]
    x1 = cx - 0.5 * w
    y1 = cy - 0.5 * h
    x2 = x1 + w
    y2 = y1 + h

    if torch.jit.is_scripting() or torch.is_tensor(bboxes):
        return torch.stack([x1, y1, x2, y2], dim=-1)
    else:
        return np.stack([x1, y1, x2, y2], axis=-1)


class PPYoloELoss(nn.Module):
    def __init__(
        self,
        num_classes: int,
        use_varifocal_loss: bool = True,
        use_static_assigner: bool = True,
        reg_max: int = 16,
        classification_loss_weight: float = 1.0,
        iou_loss_weight: float = 2.5,
        dfl_loss_weight: float = 0.5,
    ):
        super().__init__()
        self.use_varifocal_loss = use_varifocal_loss
        self.classification_loss_weight = classification_loss_weight
        self.dfl_loss_weight = dfl_loss_weight
        self.iou_loss_weight = iou_loss_weight

        self.use_static_assigner = use_static_assigner
        self.reg_max = reg_max
        self.num_classes = num_classes

        # Same as in PPYoloE head
        proj = torch.linspace(0, self.reg_max, self.reg_max + 1).reshape([1, self.reg_max + 1, 1, 1])
        self.register_buffer("proj_conv", proj)

    @torch.no_grad()
    def _yolox_targets_to_ppyolo(self, targets: torch.Tensor, batch_size: int) -> Mapping[str, torch.Tensor]:
        """
        Convert targets from YoloX format to PPYolo since its the easiest (not the cleanest) way to
        have PP Yolo training & metrics computed

        :param targets: (N, 6) format of bboxes is meant to be LABEL_CXCYWH (index, c, cx, cy, w, h)
        """
        image_index = targets[:, 0]
        gt_class = targets[:, 1:2].long()
        gt_bbox = cxcywh_to_xyxy(targets[:, 2:6], image_shape=None)

        per_image_class = []
        per_image_bbox = []
        per_image_pad_mask = []

        max_boxes = 0
        for i in range(batch_size):
            mask = image_index == i

            image_labels = gt_class[mask]
            image_bboxes = gt_bbox[mask, :]
            valid_bboxes = image_bboxes.sum(dim=1, keepdims=True) > 0

            per_image_class.append(image_labels)
            per_image_bbox.append(image_bboxes)
            per_image_pad_mask.append(valid_bboxes)

            max_boxes = max(max_boxes, mask.sum().item())

        for i in range(batch_size):
            elements_to_pad = max_boxes - len(per_image_class[i])
            padding_left = 0
            padding_right = 0
            padding_top = 0
            padding_bottom = elements_to_pad
            pad = padding_left, padding_right, padding_top, padding_bottom
            per_image_class[i] = F.pad(per_image_class[i], pad, mode="constant", value=0)
            per_image_bbox[i] = F.pad(per_image_bbox[i], pad, mode="constant", value=0)
            per_image_pad_mask[i] = F.pad(per_image_pad_mask[i], pad, mode="constant", value=0)

        return {
            "gt_class": torch.stack(per_image_class, dim=0),
            "gt_bbox": torch.stack(per_image_bbox, dim=0),
            "pad_gt_mask": torch.stack(per_image_pad_mask, dim=0),
        }


criterion = PPYoloELoss(num_classes=3, reg_max=4)
convert_targets = torch.compile(criterion._yolox_targets_to_ppyolo)


def make():
    torch.manual_seed(0)
    loss = PPYoloELoss(num_classes=3, reg_max=4)
    targets = torch.tensor([
        [0, 1, 10.0, 12.0, 4.0, 6.0],
        [0, 2, 30.0, 20.0, 8.0, 8.0],
        [1, 0, 16.0, 16.0, 10.0, 4.0],
        [0, 1, 5.0, 25.0, 2.0, 2.0],
    ])
    return loss._yolox_targets_to_ppyolo, [(targets, 2), (targets[2:3], 2), (targets[:0], 1)]
