"""torchvision masks_to_boxes: vectorised any()/argmax bounds, empty masks zeroed with `bounding_boxes[empty_masks] = 0` (boolean-mask setitem of a scalar), and a numel() early return.

Source: pytorch/vision@v0.29.1:torchvision/ops/boxes.py:518-569
Kept: the function verbatim except the API-usage logging call, used as a
segmentation head's post-processing (threshold the sigmoid masks, then boxes).
Simplified: the head is a 1x1 conv; 3 masks of 6x6.
"""
import torch
from torch import nn


def masks_to_boxes(masks: torch.Tensor) -> torch.Tensor:
    if masks.numel() == 0:
        return torch.zeros((0, 4), device=masks.device, dtype=torch.float)

    n, h, w = masks.shape

    masks_bool = masks.bool()

    non_zero_rows = torch.any(masks_bool, dim=2)
    non_zero_cols = torch.any(masks_bool, dim=1)

    empty_masks = ~torch.any(non_zero_rows, dim=1)

    non_zero_rows_f = non_zero_rows.float()
    non_zero_cols_f = non_zero_cols.float()

    y1 = non_zero_rows_f.argmax(dim=1)
    x1 = non_zero_cols_f.argmax(dim=1)
    y2 = (h - 1) - non_zero_rows_f.flip(dims=[1]).argmax(dim=1)
    x2 = (w - 1) - non_zero_cols_f.flip(dims=[1]).argmax(dim=1)

    bounding_boxes = torch.stack([x1, y1, x2, y2], dim=1).float()

    bounding_boxes[empty_masks] = 0

    return bounding_boxes


class MaskHead(nn.Module):
    def __init__(self, threshold=0.5):
        super().__init__()
        self.mask_logits = nn.Conv2d(4, 3, 1)
        self.threshold = threshold

    def forward(self, features, max_instances: int = 3):
        masks = self.mask_logits(features).sigmoid()[0] > self.threshold
        return masks_to_boxes(masks[:max_instances])


def make():
    torch.manual_seed(0)
    head = MaskHead()
    with torch.no_grad():
        head.mask_logits.bias[2] = -100.0  # third mask is always empty
    return head, [(torch.randn(1, 4, 6, 6),), (torch.randn(1, 4, 6, 6), 0)]


def export_boxes(features):
    head = torch.compile(MaskHead(), fullgraph=True)
    return head(features)
