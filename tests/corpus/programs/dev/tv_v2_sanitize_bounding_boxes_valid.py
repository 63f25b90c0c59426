"""torchvision v2 sanitize_bounding_boxes on pure tensors: a validity mask built with `&=`, then `bounding_boxes[valid]` and `labels[valid]`.

Source: pytorch/vision@v0.29.1:torchvision/transforms/v2/functional/_misc.py:343-444; torchvision/transforms/v2/functional/_meta.py:146-149,328-361; torchvision/tv_tensors/_bounding_boxes.py:14-54
Kept: sanitize_bounding_boxes' pure-tensor path (the ValueError when format or
canvas_size is None, the str -> BoundingBoxFormat lookup, the boolean-mask
read), _get_sanitize_bounding_boxes_mask verbatim (rotated and axis-aligned
widths/heights, the `valid &=` bounds checks), the BoundingBoxFormat enum,
is_rotated_bounding_format and the XYWH -> XYXY conversion of
_convert_bounding_box_format.
Simplified: only the XYWH and XYXYXYXY source formats are converted; the
tv_tensors.BoundingBoxes branch is left out. The compiled function is the
detection data pipeline's last step, which also filters the labels.
"""
from enum import Enum
from typing import Optional

import torch


class BoundingBoxFormat(Enum):
    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"
    XYWHR = "XYWHR"
    CXCYWHR = "CXCYWHR"
    XYXYXYXY = "XYXYXYXY"


def is_rotated_bounding_format(format) -> bool:
    if isinstance(format, BoundingBoxFormat):
        return (
            format == BoundingBoxFormat.XYWHR
            or format == BoundingBoxFormat.CXCYWHR
            or format == BoundingBoxFormat.XYXYXYXY
        )
    elif isinstance(format, str):
        return format in ("XYWHR", "CXCYWHR", "XYXYXYXY")


def _xywh_to_xyxy(xywh: torch.Tensor, inplace: bool) -> torch.Tensor:
    xyxy = xywh if inplace else xywh.clone()
    xyxy[..., 2:] += xyxy[..., :2]
    return xyxy


def _convert_bounding_box_format(bounding_boxes, old_format, new_format, inplace=False):
    if new_format == old_format:
        return bounding_boxes

    if is_rotated_bounding_format(old_format) ^ is_rotated_bounding_format(new_format):
        raise ValueError("Cannot convert between rotated and unrotated bounding boxes.")

    if old_format == BoundingBoxFormat.XYWH:
        bounding_boxes = _xywh_to_xyxy(bounding_boxes, inplace)

    return bounding_boxes


def _get_sanitize_bounding_boxes_mask(
    bounding_boxes: torch.Tensor,
    format: BoundingBoxFormat,
    canvas_size: tuple,
    min_size: float = 1.0,
    min_area: float = 1.0,
) -> torch.Tensor:

    is_rotated = is_rotated_bounding_format(format)
    intermediate_format = BoundingBoxFormat.XYXYXYXY if is_rotated else BoundingBoxFormat.XYXY
    bounding_boxes = _convert_bounding_box_format(bounding_boxes, new_format=intermediate_format, old_format=format)

    image_h, image_w = canvas_size
    if is_rotated:
        dx12 = bounding_boxes[..., 0] - bounding_boxes[..., 2]
        dy12 = bounding_boxes[..., 1] - bounding_boxes[..., 3]
        dx23 = bounding_boxes[..., 3] - bounding_boxes[..., 5]
        dy23 = bounding_boxes[..., 4] - bounding_boxes[..., 6]
        ws = torch.sqrt(dx12.pow(2) + dy12.pow(2))
        hs = torch.sqrt(dx23.pow(2) + dy23.pow(2))
    else:
        ws, hs = bounding_boxes[:, 2] - bounding_boxes[:, 0], bounding_boxes[:, 3] - bounding_boxes[:, 1]
    valid = (ws >= min_size) & (hs >= min_size) & (bounding_boxes >= 0).all(dim=-1) & (ws * hs >= min_area)
    # TODO: Do we really need to check for out of bounds here? All
    # transforms should be clamping anyway, so this should never happen?
    image_h, image_w = canvas_size
    valid &= (bounding_boxes[:, 0] <= image_w) & (bounding_boxes[:, 2] <= image_w)
    valid &= (bounding_boxes[:, 1] <= image_h) & (bounding_boxes[:, 3] <= image_h)
    if is_rotated:
        valid &= (bounding_boxes[..., 4] <= image_w) & (bounding_boxes[..., 5] <= image_h)
        valid &= (bounding_boxes[..., 6] <= image_w) & (bounding_boxes[..., 7] <= image_h)
    return valid


def sanitize_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: Optional[BoundingBoxFormat] = None,
    canvas_size: Optional[tuple] = None,
    min_size: float = 1.0,
    min_area: float = 1.0,
) -> tuple:
    if format is None or canvas_size is None:
        raise ValueError(
            "format and canvas_size cannot be None if bounding_boxes is a pure tensor. "
            f"Got format={format} and canvas_size={canvas_size}."
            "Set those to appropriate values or pass bounding_boxes as a tv_tensors.BoundingBoxes object."
        )
    if isinstance(format, str):
        format = BoundingBoxFormat[format.upper()]
    valid = _get_sanitize_bounding_boxes_mask(
        bounding_boxes, format=format, canvas_size=canvas_size, min_size=min_size, min_area=min_area
    )
    bounding_boxes = bounding_boxes[valid]

    return bounding_boxes, valid


@torch.compile(backend="eager")
def sanitize_targets(boxes, labels, box_format, canvas_size):
    boxes, valid = sanitize_bounding_boxes(boxes, format=box_format, canvas_size=canvas_size, min_size=1.0)
    return {"boxes": boxes, "labels": labels[valid]}


RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    xywh = torch.tensor([[1.0, 1.0, 4.0, 3.0], [2.0, 2.0, 0.5, 5.0], [10.0, 1.0, 9.0, 2.0], [0.0, 0.0, 2.0, 2.0]])
    labels = torch.tensor([1, 2, 3, 4])
    corners = torch.tensor([[1.0, 1.0, 5.0, 1.0, 5.0, 4.0, 1.0, 4.0], [0.0, 0.0, 0.5, 0.0, 0.5, 0.5, 0.0, 0.5]])
    return sanitize_targets._torchdynamo_orig_callable, [
        (xywh, labels, "xywh", (8, 12)),
        (corners, labels[:2], BoundingBoxFormat.XYXYXYXY, (8, 12)),
        (xywh, labels, None, (8, 12)),
    ]
