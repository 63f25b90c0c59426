"""torchvision box_convert: allowed-format ValueError, a tuple-keyed elif chain of pure tensor conversions (no break).

Source: pytorch/vision@v0.29.2:torchvision/ops/boxes.py:191-276; torchvision/ops/_box_convert.py:4-60
Kept: box_convert's format validation, `in_fmt == out_fmt` clone, the
(in, out) tuple dispatch for the axis-aligned formats and the
NotImplementedError fallback; the four _box_* helpers verbatim; used by DETR-
style postprocessing (cxcywh -> xyxy, scaled by image size).
Simplified: rotated formats are dropped from the chain; _log_api_usage_once dropped.
"""
import torch
from torch import Tensor


def _box_cxcywh_to_xyxy(boxes: Tensor) -> Tensor:
    cx, cy, w, h = boxes.unbind(-1)
    x1 = cx - 0.5 * w
    y1 = cy - 0.5 * h
    x2 = cx + 0.5 * w
    y2 = cy + 0.5 * h
    return torch.stack((x1, y1, x2, y2), dim=-1)


def _box_xyxy_to_cxcywh(boxes: Tensor) -> Tensor:
    x1, y1, x2, y2 = boxes.unbind(-1)
    cx = (x1 + x2) / 2
    cy = (y1 + y2) / 2
    w = x2 - x1
    h = y2 - y1
    return torch.stack((cx, cy, w, h), dim=-1)


def _box_xywh_to_xyxy(boxes: Tensor) -> Tensor:
    x, y, w, h = boxes.unbind(-1)
    return torch.stack([x, y, x + w, y + h], dim=-1)


def _box_xyxy_to_xywh(boxes: Tensor) -> Tensor:
    x1, y1, x2, y2 = boxes.unbind(-1)
    w = x2 - x1
    h = y2 - y1
    return torch.stack((x1, y1, w, h), dim=-1)


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    allowed_fmts = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in allowed_fmts or out_fmt not in allowed_fmts:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")
    if in_fmt == out_fmt:
        return boxes.clone()
    e = (in_fmt, out_fmt)
    if e == ("xywh", "xyxy"):
        boxes = _box_xywh_to_xyxy(boxes)
    elif e == ("cxcywh", "xyxy"):
        boxes = _box_cxcywh_to_xyxy(boxes)
    elif e == ("xyxy", "xywh"):
        boxes = _box_xyxy_to_xywh(boxes)
    elif e == ("xyxy", "cxcywh"):
        boxes = _box_xyxy_to_cxcywh(boxes)
    elif e == ("xywh", "cxcywh"):
        boxes = _box_xywh_to_xyxy(boxes)
        boxes = _box_xyxy_to_cxcywh(boxes)
    elif e == ("cxcywh", "xywh"):
        boxes = _box_cxcywh_to_xyxy(boxes)
        boxes = _box_xyxy_to_xywh(boxes)
    else:
        raise NotImplementedError(f"Unsupported Bounding Box Conversions for given in_fmt {e[0]} and out_fmt {e[1]}")
    return boxes


class PostProcess(torch.nn.Module):
    def forward(self, pred_boxes, target_sizes, out_fmt: str = "xyxy"):
        boxes = box_convert(pred_boxes, "cxcywh", out_fmt)
        img_h, img_w = target_sizes.unbind(1)
        scale_fct = torch.stack([img_w, img_h, img_w, img_h], dim=1)
        return boxes * scale_fct[:, None, :]


postprocess = torch.compile(PostProcess())


def make():
    torch.manual_seed(0)
    boxes = torch.rand(1, 3, 4)
    sizes = torch.tensor([[32.0, 48.0]])
    return PostProcess(), [(boxes, sizes), (boxes, sizes, "xywh"), (boxes, sizes, "cxcywh")]
