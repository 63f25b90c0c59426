"""Conditional DETR PostProcess: sigmoid scores, top-100 over queries x classes, box gather and rescale to image sizes, results as a list of per-image dicts (no break expected).

Source: Atten4Vis/ConditionalDETR@0b04a859c7fac33a866fcdea06f338610ba6e9d8:models/conditional_detr.py:268-298
Also: util/box_ops.py box_cxcywh_to_xyxy.
Kept: PostProcess.forward verbatim (its @torch.no_grad(), the two shape asserts,
topk on the flattened probabilities, `//` and `%` on the indexes, target_sizes.unbind).
Simplified: 30 queries and 4 classes so that 100 candidates exist.
"""
import torch
from torch import nn


def box_cxcywh_to_xyxy(x):
    x_c, y_c, w, h = x.unbind(-1)
    b = [(x_c - 0.5 * w), (y_c - 0.5 * h),
         (x_c + 0.5 * w), (y_c + 0.5 * h)]
    return torch.stack(b, dim=-1)


class PostProcess(nn.Module):
    """ This module converts the model's output into the format expected by the coco api"""
    @torch.no_grad()
    def forward(self, outputs, target_sizes):
        out_logits, out_bbox = outputs['pred_logits'], outputs['pred_boxes']

        assert len(out_logits) == len(target_sizes)
        assert target_sizes.shape[1] == 2

        prob = out_logits.sigmoid()
        topk_values, topk_indexes = torch.topk(prob.view(out_logits.shape[0], -1), 100, dim=1)
        scores = topk_values
        topk_boxes = topk_indexes // out_logits.shape[2]
        labels = topk_indexes % out_logits.shape[2]
        boxes = box_cxcywh_to_xyxy(out_bbox)
        boxes = torch.gather(boxes, 1, topk_boxes.unsqueeze(-1).repeat(1, 1, 4))

        # and from relative [0, 1] to absolute [0, height] coordinates
        img_h, img_w = target_sizes.unbind(1)
        scale_fct = torch.stack([img_w, img_h, img_w, img_h], dim=1)
        boxes = boxes * scale_fct[:, None, :]

        results = [{'scores': s, 'labels': l, 'boxes': b} for s, l, b in zip(scores, labels, boxes)]

        return results


postprocessors = {'bbox': PostProcess()}


@torch.compile(dynamic=False)
def evaluate_step(outputs, orig_target_sizes):
    return postprocessors['bbox'](outputs, orig_target_sizes)


def make():
    torch.manual_seed(0)
    outputs = {'pred_logits': torch.randn(2, 30, 4), 'pred_boxes': torch.rand(2, 30, 4)}
    sizes = torch.tensor([[480, 640], [512, 512]])
    return evaluate_step._torchdynamo_orig_callable, [(outputs, sizes), ({k: v[:1] for k, v in outputs.items()}, sizes[:1])]
