"""torchvision masks_to_boxes: argmax over any() rows, empty masks zeroed by masked assignment (no break).

Source: pytorch/vision@v0.29.2:torchvision/ops/boxes.py:518-568
Kept: the numel()==0 early return, any/argmax/flip arithmetic, and the masked
assignment `bounding_boxes[empty_masks] = 0`.
Simplified: _log_api_usage_once dropped; 3 masks of 8x8.
"""
import torch


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


compiled_masks_to_boxes = torch.compile(masks_to_boxes, dynamic=False)


def make():
    masks = torch.zeros(3, 8, 8)
    masks[0, 2:5, 1:7] = 1
    masks[1, 0, 0] = 1
    return masks_to_boxes, [(masks,), (torch.zeros(0, 8, 8),)]
