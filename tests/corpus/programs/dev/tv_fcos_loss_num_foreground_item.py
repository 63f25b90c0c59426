"""torchvision FCOS head loss: `num_foreground = foregroud_mask.sum().item()` normalises the losses, with background set by a boolean mask and per-image empty-target branches.

Source: pytorch/vision@v0.29.1:torchvision/models/detection/fcos.py:53-125
Kept: compute_loss's per-image target gathering (len(...) == 0 branch,
`gt_classes_targets[matched_idxs_per_image < 0] = -1`), the stack, the
foreground mask with its .item() count, the one-hot assignment through the
mask, masked regression/centerness terms and the `/ max(1, num_foreground)`
normalisation in the returned dict.
Simplified: sigmoid_focal_loss inlined from torchvision.ops; box regression is
an L1 on raw offsets instead of decode + GIoU; centerness targets are random.
"""
import torch
from torch import nn


def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2, reduction: str = "none"):
    p = torch.sigmoid(inputs)
    ce_loss = nn.functional.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "sum":
        loss = loss.sum()
    return loss


class FCOSHead(nn.Module):
    def __init__(self, in_channels=4, num_classes=3):
        super().__init__()
        self.classification_head = nn.Linear(in_channels, num_classes)
        self.regression_head = nn.Linear(in_channels, 5)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        cls_logits = head_outputs["cls_logits"]
        bbox_regression = head_outputs["bbox_regression"]
        bbox_ctrness = head_outputs["bbox_ctrness"]

        all_gt_classes_targets = []
        all_gt_boxes_targets = []
        for targets_per_image, matched_idxs_per_image in zip(targets, matched_idxs):
            if len(targets_per_image["labels"]) == 0:
                gt_classes_targets = targets_per_image["labels"].new_zeros((len(matched_idxs_per_image),))
                gt_boxes_targets = targets_per_image["boxes"].new_zeros((len(matched_idxs_per_image), 4))
            else:
                gt_classes_targets = targets_per_image["labels"][matched_idxs_per_image.clip(min=0)]
                gt_boxes_targets = targets_per_image["boxes"][matched_idxs_per_image.clip(min=0)]
            gt_classes_targets[matched_idxs_per_image < 0] = -1  # background
            all_gt_classes_targets.append(gt_classes_targets)
            all_gt_boxes_targets.append(gt_boxes_targets)

        all_gt_boxes_targets, all_gt_classes_targets, anchors = (
            torch.stack(all_gt_boxes_targets),
            torch.stack(all_gt_classes_targets),
            torch.stack(anchors),
        )

        # compute foregroud
        foregroud_mask = all_gt_classes_targets >= 0
        num_foreground = foregroud_mask.sum().item()

        # classification loss
        gt_classes_targets = torch.zeros_like(cls_logits)
        gt_classes_targets[foregroud_mask, all_gt_classes_targets[foregroud_mask]] = 1.0
        loss_cls = sigmoid_focal_loss(cls_logits, gt_classes_targets, reduction="sum")

        pred_boxes = bbox_regression + anchors
        loss_bbox_reg = nn.functional.l1_loss(
            pred_boxes[foregroud_mask], all_gt_boxes_targets[foregroud_mask], reduction="sum"
        )

        gt_ctrness_targets = torch.rand(bbox_ctrness.shape[:-1])
        pred_centerness = bbox_ctrness.squeeze(dim=2)
        loss_bbox_ctrness = nn.functional.binary_cross_entropy_with_logits(
            pred_centerness[foregroud_mask], gt_ctrness_targets[foregroud_mask], reduction="sum"
        )

        return {
            "classification": loss_cls / max(1, num_foreground),
            "bbox_regression": loss_bbox_reg / max(1, num_foreground),
            "bbox_ctrness": loss_bbox_ctrness / max(1, num_foreground),
        }

    def forward(self, x, targets, anchors, matched_idxs):
        reg = self.regression_head(x)
        head_outputs = {"cls_logits": self.classification_head(x), "bbox_regression": reg[..., :4], "bbox_ctrness": reg[..., 4:]}
        return self.compute_loss(targets, head_outputs, anchors, matched_idxs)


def train_one_step(model, batch):
    model.train()
    loss_fn = torch.compile(model)
    losses = loss_fn(*batch)
    return sum(losses.values())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 4)
    anchors = [torch.rand(5, 4) * 8, torch.rand(5, 4) * 8]
    targets = [
        {"labels": torch.tensor([1, 2]), "boxes": torch.rand(2, 4) * 8},
        {"labels": torch.zeros(0, dtype=torch.long), "boxes": torch.zeros(0, 4)},
    ]
    matched = [torch.tensor([0, -1, 1, 1, -1]), torch.full((5,), -1)]
    return FCOSHead(), [(x, targets, anchors, matched)]
