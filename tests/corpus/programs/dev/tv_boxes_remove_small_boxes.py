"""torchvision remove_small_boxes: `torch.where(keep)[0]` returns a data-dependent number of indices.

Source: pytorch/vision@v0.29.2:torchvision/ops/boxes.py:129-152
Kept: the `_log_api_usage_once` guard (a no-op stand-in here), the width/height
computation, `torch.where(keep)[0]`; the caller filters boxes and scores as
RPN's filter_proposals does.
Simplified: _log_api_usage_once records nothing; 6 boxes.
"""
import torch


def _log_api_usage_once(obj):
    return None


def remove_small_boxes(boxes, min_size):
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        _log_api_usage_once(remove_small_boxes)
    ws, hs = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    keep = (ws >= min_size) & (hs >= min_size)
    keep = torch.where(keep)[0]
    return keep


@torch.compile
def filter_boxes(boxes, scores, min_size: float = 1.0):
    keep = remove_small_boxes(boxes, min_size)
    boxes, scores = boxes[keep], scores[keep]
    return boxes, scores


def make():
    torch.manual_seed(0)
    xy = torch.rand(6, 2) * 10
    boxes = torch.cat([xy, xy + torch.rand(6, 2) * 3], dim=1)
    return filter_boxes._torchdynamo_orig_callable, [(boxes, torch.rand(6))]
