"""D-FINE post-processor: focal top-k over classes x queries, gather boxes, then a COCO id remap built from `int(x.item())` per label.

Source: Peterande/D-FINE@4a1f73a8bcfac736a88abde9596d87f116d780a7:src/zoo/dfine/postprocessor.py:16-101
Kept: mod(), DFINEPostProcessor verbatim (box_convert then scale by
orig_target_sizes.repeat(1, 2), the use_focal_loss top-k branch and the
softmax branch with its `scores.shape[1] > num_top_queries` check,
deploy_mode early return, the remap_mscoco_category list comprehension
over labels.flatten() with .item(), the per-image result dicts).
Simplified: torchvision.ops.box_convert is a local cxcywh->xyxy stand-in;
mscoco_label2category (src/data/dataset/coco_dataset.py) is a 4-entry
dict imported from a local namespace; 4 classes, 6 queries, top 5.
"""
import types

import torch
import torch.nn as nn
import torch.nn.functional as F


def box_convert(boxes, in_fmt, out_fmt):
    assert in_fmt == "cxcywh" and out_fmt == "xyxy"
    cx, cy, w, h = boxes.unbind(-1)
    x1 = cx - 0.5 * w
    y1 = cy - 0.5 * h
    x2 = cx + 0.5 * w
    y2 = cy + 0.5 * h
    return torch.stack((x1, y1, x2, y2), dim=-1)


dataset = types.SimpleNamespace(mscoco_label2category={0: 1, 1: 2, 2: 3, 3: 4})


def mod(a, b):
    out = a - a // b * b
    return out


class DFINEPostProcessor(nn.Module):
    __share__ = ["num_classes", "use_focal_loss", "num_top_queries", "remap_mscoco_category"]

    def __init__(
        self, num_classes=80, use_focal_loss=True, num_top_queries=300, remap_mscoco_category=False
    ) -> None:
        super().__init__()
        self.use_focal_loss = use_focal_loss
        self.num_top_queries = num_top_queries
        self.num_classes = int(num_classes)
        self.remap_mscoco_category = remap_mscoco_category
        self.deploy_mode = False

    def extra_repr(self) -> str:
        return f"use_focal_loss={self.use_focal_loss}, num_classes={self.num_classes}, num_top_queries={self.num_top_queries}"

    def forward(self, outputs, orig_target_sizes: torch.Tensor):
        logits, boxes = outputs["pred_logits"], outputs["pred_boxes"]

        bbox_pred = box_convert(boxes, in_fmt="cxcywh", out_fmt="xyxy")
        bbox_pred *= orig_target_sizes.repeat(1, 2).unsqueeze(1)

        if self.use_focal_loss:
            scores = F.sigmoid(logits)
            scores, index = torch.topk(scores.flatten(1), self.num_top_queries, dim=-1)
            # TODO for older tensorrt
            # labels = index % self.num_classes
            labels = mod(index, self.num_classes)
            index = index // self.num_classes
            boxes = bbox_pred.gather(
                dim=1, index=index.unsqueeze(-1).repeat(1, 1, bbox_pred.shape[-1])
            )

        else:
            scores = F.softmax(logits)[:, :, :-1]
            scores, labels = scores.max(dim=-1)
            if scores.shape[1] > self.num_top_queries:
                scores, index = torch.topk(scores, self.num_top_queries, dim=-1)
                labels = torch.gather(labels, dim=1, index=index)
                boxes = torch.gather(
                    boxes, dim=1, index=index.unsqueeze(-1).tile(1, 1, boxes.shape[-1])
                )

        # TODO for onnx export
        if self.deploy_mode:
            return labels, boxes, scores

        # TODO
        if self.remap_mscoco_category:
            mscoco_label2category = dataset.mscoco_label2category

            labels = (
                torch.tensor([mscoco_label2category[int(x.item())] for x in labels.flatten()])
                .to(boxes.device)
                .reshape(labels.shape)
            )

        results = []
        for lab, box, sco in zip(labels, boxes, scores):
            result = dict(labels=lab, boxes=box, scores=sco)
            results.append(result)

        return results

    def deploy(
        self,
    ):
        self.eval()
        self.deploy_mode = True
        return self


def build_postprocessor():
    return DFINEPostProcessor(num_classes=4, use_focal_loss=True, num_top_queries=5,
                              remap_mscoco_category=True)


postprocessor = torch.compile(build_postprocessor())


def make():
    torch.manual_seed(0)
    outputs = {"pred_logits": torch.randn(2, 6, 4), "pred_boxes": torch.rand(2, 6, 4)}
    orig_target_sizes = torch.tensor([[640, 480], [320, 320]])
    return build_postprocessor(), [(outputs, orig_target_sizes)]
