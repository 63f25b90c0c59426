"""torchvision batched_nms: large inputs take `_batched_nms_vanilla`, a loop over `torch.unique(idxs)` with where/masked writes.

Source: pytorch/vision@v0.29.2:torchvision/ops/boxes.py:57-126
Kept: batched_nms's numel threshold switch (lowered here so the small test
takes the vanilla path, as large detection outputs do), the coordinate-trick
path with its empty early return, and _batched_nms_vanilla verbatim.
Simplified: `nms` is a C++ op; it is replaced by a pure-torch stand-in that
keeps the top-scoring box of each call (the surrounding control is unchanged).
"""
import torch
from torch import Tensor

VANILLA_NUMEL = 16


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    return scores.argsort(descending=True)[:1]


def _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold: float):
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    boxes_for_nms = boxes + offsets[:, None]
    return nms(boxes_for_nms, scores, iou_threshold)


def _batched_nms_vanilla(boxes, scores, idxs, iou_threshold: float):
    keep_mask = torch.zeros_like(scores, dtype=torch.bool)
    for class_id in torch.unique(idxs):
        curr_indices = torch.where(idxs == class_id)[0]
        curr_keep_indices = nms(boxes[curr_indices], scores[curr_indices], iou_threshold)
        keep_mask[curr_indices[curr_keep_indices]] = True
    keep_indices = torch.where(keep_mask)[0]
    return keep_indices[scores[keep_indices].sort(descending=True)[1]]


def batched_nms(boxes, scores, idxs, iou_threshold: float):
    if boxes.numel() > (VANILLA_NUMEL if boxes.device.type == "cpu" else 100000) and not torch.jit.is_tracing():
        return _batched_nms_vanilla(boxes, scores, idxs, iou_threshold)
    else:
        return _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold)


@torch.compile
def postprocess(boxes, scores, labels):
    keep = batched_nms(boxes, scores, labels, 0.5)
    return boxes[keep], scores[keep], labels[keep]


def make():
    torch.manual_seed(0)
    xy = torch.rand(6, 2) * 8
    boxes = torch.cat([xy, xy + 2], 1)
    return postprocess._torchdynamo_orig_callable, [(boxes, torch.rand(6), torch.tensor([0, 1, 0, 2, 1, 0])), (boxes[:3], torch.rand(3), torch.tensor([0, 1, 0]))]
