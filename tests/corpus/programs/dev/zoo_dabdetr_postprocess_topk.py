"""DAB-DETR PostProcess: sigmoid scores, top-k over the flattened (query x class) grid, box index by floor-division, gather of cxcywh->xyxy boxes, scaling to image size, list of per-image dicts.

Source: IDEA-Research/DAB-DETR@12a90db6e0fd2462bd1d691495f35d13682d35e9:models/DAB_DETR/DABDETR.py:399-435
Also: util/box_ops.py:9-13 @723ddb80e95dbd3c9a2e4ef68c1e0fa9319167cf (box_cxcywh_to_xyxy).
Kept: PostProcess verbatim (`@torch.no_grad()` forward, the two asserts on
`len(out_logits)` and `target_sizes.shape[1]`, topk/`//`/`%`, gather, unbind,
the results list comprehension) and the num_select plumbing from build_DABDETR.
Simplified: num_select 10, 6 queries x 5 classes, fake model outputs.
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
    def __init__(self, num_select=100) -> None:
        super().__init__()
        self.num_select = num_select

    @torch.no_grad()
    def forward(self, outputs, target_sizes):
        """ Perform the computation
        Parameters:
            outputs: raw outputs of the model
            target_sizes: tensor of dimension [batch_size x 2] containing the size of each images of the batch
                          For evaluation, this must be the original image size (before any data augmentation)
                          For visualization, this should be the image size after data augment, but before padding
        """
        num_select = self.num_select
        out_logits, out_bbox = outputs['pred_logits'], outputs['pred_boxes']

        assert len(out_logits) == len(target_sizes)
        assert target_sizes.shape[1] == 2

        prob = out_logits.sigmoid()
        topk_values, topk_indexes = torch.topk(prob.view(out_logits.shape[0], -1), num_select, dim=1)
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


class Args:
    num_select = 10


def build_postprocessors(args):
    postprocessors = {'bbox': torch.compile(PostProcess(num_select=args.num_select))}
    return postprocessors


def make():
    torch.manual_seed(0)
    outputs = {'pred_logits': torch.randn(2, 6, 5), 'pred_boxes': torch.rand(2, 6, 4)}
    target_sizes = torch.tensor([[480, 640], [320, 320]])
    outputs1 = {'pred_logits': torch.randn(1, 6, 5), 'pred_boxes': torch.rand(1, 6, 4)}
    return PostProcess(num_select=Args.num_select), [
        (outputs, target_sizes),
        (outputs1, target_sizes[:1]),
    ]
