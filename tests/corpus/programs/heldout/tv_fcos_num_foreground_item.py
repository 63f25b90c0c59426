"""torchvision FCOS head loss: `foregroud_mask.sum().item()` and boolean-mask reads of boxes.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/fcos.py:52-125
Kept: the per-image target gathering with the empty-labels branch,
`gt_classes_targets[matched < 0] = -1`, the stacks, the foreground mask and
`.sum().item()`, the one-hot assignment, focal loss, box decode + masked giou
loss, and the centerness loss normalised by num_foreground.
Simplified: box coder decode is an add; giou loss is an L1; 2 images x 5 anchors, 3 classes.
"""
import torch
import torch.nn.functional as F


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2, reduction="none"):
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    return loss.sum() if reduction == "sum" else loss


class FCOSHead(torch.nn.Module):
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
            gt_classes_targets[matched_idxs_per_image < 0] = -1
            all_gt_classes_targets.append(gt_classes_targets)
            all_gt_boxes_targets.append(gt_boxes_targets)
        all_gt_boxes_targets, all_gt_classes_targets, anchors = (
            torch.stack(all_gt_boxes_targets), torch.stack(all_gt_classes_targets), torch.stack(anchors),
        )
        foregroud_mask = all_gt_classes_targets >= 0
        num_foreground = foregroud_mask.sum().item()
        gt_classes_targets = torch.zeros_like(cls_logits)
        gt_classes_targets[foregroud_mask, all_gt_classes_targets[foregroud_mask]] = 1.0
        loss_cls = sigmoid_focal_loss(cls_logits, gt_classes_targets, reduction="sum")
        pred_boxes = anchors + bbox_regression
        loss_bbox_reg = (pred_boxes[foregroud_mask] - all_gt_boxes_targets[foregroud_mask]).abs().sum()
        loss_bbox_ctrness = F.binary_cross_entropy_with_logits(bbox_ctrness[foregroud_mask][:, 0], torch.ones(num_foreground), reduction="sum")
        return {
            "classification": loss_cls / max(1, num_foreground),
            "bbox_regression": loss_bbox_reg / max(1, num_foreground),
            "bbox_ctrness": loss_bbox_ctrness / max(1, num_foreground),
        }

    def forward(self, targets, cls_logits, bbox_regression, bbox_ctrness, anchors, matched_idxs):
        head_outputs = {"cls_logits": cls_logits, "bbox_regression": bbox_regression, "bbox_ctrness": bbox_ctrness}
        return self.compute_loss(targets, head_outputs, anchors, matched_idxs)


fcos_head = torch.compile(FCOSHead())


def make():
    torch.manual_seed(0)
    targets = [{"labels": torch.tensor([1, 2]), "boxes": torch.rand(2, 4)}, {"labels": torch.zeros(0, dtype=torch.long), "boxes": torch.zeros(0, 4)}]
    matched = [torch.tensor([0, -1, 1, 1, -1]), torch.tensor([-1, -1, -1, -1, -1])]
    anchors = [torch.rand(5, 4), torch.rand(5, 4)]
    return FCOSHead(), [(targets, torch.randn(2, 5, 3), torch.randn(2, 5, 4), torch.randn(2, 5, 1), anchors, matched)]
