"""torchvision BoxCoder.decode: isinstance torch._asserts, a Python sum of per-image box counts, clamp of dw/dh (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/detection/_utils.py:125-224
Kept: the BoxCoder constructor (weights, bbox_xform_clip = log(1000/16)),
decode (the two torch._assert on types, boxes_per_image sizes, the
`box_sum += val` loop, the `box_sum > 0` reshapes) and decode_single verbatim.
Simplified: 2 images with 2 and 1 boxes, 2 classes of deltas.
"""
import math

import torch
from torch import Tensor


class BoxCoder:
    def __init__(self, weights, bbox_xform_clip: float = math.log(1000.0 / 16)) -> None:
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def decode(self, rel_codes: Tensor, boxes: list) -> Tensor:
        torch._assert(isinstance(boxes, (list, tuple)), "This function expects boxes of type list or tuple.")
        torch._assert(isinstance(rel_codes, torch.Tensor), "This function expects rel_codes of type torch.Tensor.")
        boxes_per_image = [b.size(0) for b in boxes]
        concat_boxes = torch.cat(boxes, dim=0)
        box_sum = 0
        for val in boxes_per_image:
            box_sum += val
        if box_sum > 0:
            rel_codes = rel_codes.reshape(box_sum, -1)
        pred_boxes = self.decode_single(rel_codes, concat_boxes)
        if box_sum > 0:
            pred_boxes = pred_boxes.reshape(box_sum, -1, 4)
        return pred_boxes

    def decode_single(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        boxes = boxes.to(rel_codes.dtype)
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        dw = rel_codes[:, 2::4] / ww
        dh = rel_codes[:, 3::4] / wh
        dw = torch.clamp(dw, max=self.bbox_xform_clip)
        dh = torch.clamp(dh, max=self.bbox_xform_clip)
        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        pred_w = torch.exp(dw) * widths[:, None]
        pred_h = torch.exp(dh) * heights[:, None]
        c_to_c_h = torch.tensor(0.5, dtype=pred_ctr_y.dtype, device=pred_h.device) * pred_h
        c_to_c_w = torch.tensor(0.5, dtype=pred_ctr_x.dtype, device=pred_w.device) * pred_w
        pred_boxes1 = pred_ctr_x - c_to_c_w
        pred_boxes2 = pred_ctr_y - c_to_c_h
        pred_boxes3 = pred_ctr_x + c_to_c_w
        pred_boxes4 = pred_ctr_y + c_to_c_h
        return torch.stack((pred_boxes1, pred_boxes2, pred_boxes3, pred_boxes4), dim=2).flatten(1)


box_coder = BoxCoder((10.0, 10.0, 5.0, 5.0))


@torch.compile(dynamic=False)
def decode_predictions(box_regression, proposals):
    return box_coder.decode(box_regression, proposals)


def make():
    torch.manual_seed(0)
    proposals = [torch.tensor([[0.0, 0.0, 4.0, 4.0], [1.0, 2.0, 3.0, 6.0]]), torch.tensor([[2.0, 2.0, 5.0, 5.0]])]
    return decode_predictions._torchdynamo_orig_callable, [(torch.randn(3, 8), proposals)]
