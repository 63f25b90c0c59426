"""torchvision GeneralizedRCNN.forward: `if degenerate_boxes.any():` over the training targets.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/generalized_rcnn.py:53-133
Kept: the training-target torch._asserts, the original_image_sizes loop, the
degenerate-box check with torch.where(...)[0][0] / tolist() / torch._assert,
features as an OrderedDict and the losses dict merge.
Simplified: transform is identity, backbone is one conv, rpn/roi_heads are a
box-regression loss.
"""
from collections import OrderedDict

import torch
from torch import nn


class GeneralizedRCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Conv2d(3, 4, 3, padding=1)
        self.box_head = nn.Linear(4, 4)

    def forward(self, images, targets=None):
        if self.training:
            if targets is None:
                torch._assert(False, "targets should not be none when in training mode")
            else:
                for target in targets:
                    boxes = target["boxes"]
                    if isinstance(boxes, torch.Tensor):
                        torch._assert(
                            len(boxes.shape) == 2 and boxes.shape[-1] == 4,
                            f"Expected target boxes to be a tensor of shape [N, 4], got {boxes.shape}.",
                        )
                    else:
                        torch._assert(False, f"Expected target boxes to be of type Tensor, got {type(boxes)}.")

        original_image_sizes = []
        for img in images:
            val = img.shape[-2:]
            torch._assert(len(val) == 2, f"expecting the last two dimensions of the Tensor to be H and W instead got {img.shape[-2:]}")
            original_image_sizes.append((val[0], val[1]))

        if targets is not None:
            for target_idx, target in enumerate(targets):
                boxes = target["boxes"]
                degenerate_boxes = boxes[:, 2:] <= boxes[:, :2]
                if degenerate_boxes.any():
                    bb_idx = torch.where(degenerate_boxes.any(dim=1))[0][0]
                    degen_bb = boxes[bb_idx].tolist()
                    torch._assert(
                        False,
                        "All bounding boxes should have positive height and width."
                        f" Found invalid box {degen_bb} for target at index {target_idx}.",
                    )

        features = self.backbone(torch.stack(images))
        if isinstance(features, torch.Tensor):
            features = OrderedDict([("0", features)])
        pooled = features["0"].mean(dim=(2, 3))
        losses = {}
        pred = self.box_head(pooled)
        losses.update({"loss_box_reg": sum(((pred[i] - t["boxes"].mean(0)) ** 2).mean() for i, t in enumerate(targets))})
        return losses


def train_step(model, images, targets):
    return model(images, targets)


model = GeneralizedRCNN().train()
model = torch.compile(model)

RAISING_INPUTS = {1: "AssertionError"}


def make():
    torch.manual_seed(0)
    images = [torch.rand(3, 8, 8), torch.rand(3, 8, 8)]
    good = [{"boxes": torch.tensor([[0.0, 0.0, 4.0, 4.0]])}, {"boxes": torch.tensor([[1.0, 1.0, 3.0, 5.0]])}]
    bad = [{"boxes": torch.tensor([[0.0, 0.0, 4.0, 4.0]])}, {"boxes": torch.tensor([[3.0, 1.0, 3.0, 5.0]])}]
    return GeneralizedRCNN().train(), [(images, good), (images, bad)]
