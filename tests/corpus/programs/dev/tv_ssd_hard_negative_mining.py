"""torchvision SSD.compute_loss: foreground `torch.where(...)[0]`, numel() accumulation, hard negative mining by double sort.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/ssd.py:255-324
Kept: the per-image zip with foreground where, matched gt gather,
`num_foreground += ...numel()`, box encode + smooth_l1, class targets via
masked write, cross entropy, the neg_to_pos_ratio count, -inf on positives,
the double sort, `N = max(1, num_foreground)` and the loss dict.
Simplified: box_coder.encode_single is a difference; 2 images x 6 anchors, 3 classes.
"""
import torch
import torch.nn.functional as F


class SSD(torch.nn.Module):
    def __init__(self, neg_to_pos_ratio=3):
        super().__init__()
        self.neg_to_pos_ratio = neg_to_pos_ratio

    def encode_single(self, reference_boxes, proposals):
        return reference_boxes - proposals

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        bbox_regression = head_outputs["bbox_regression"]
        cls_logits = head_outputs["cls_logits"]
        num_foreground = 0
        bbox_loss = []
        cls_targets = []
        for targets_per_image, bbox_regression_per_image, cls_logits_per_image, anchors_per_image, matched_idxs_per_image in zip(
            targets, bbox_regression, cls_logits, anchors, matched_idxs
        ):
            foreground_idxs_per_image = torch.where(matched_idxs_per_image >= 0)[0]
            foreground_matched_idxs_per_image = matched_idxs_per_image[foreground_idxs_per_image]
            num_foreground += foreground_matched_idxs_per_image.numel()
            matched_gt_boxes_per_image = targets_per_image["boxes"][foreground_matched_idxs_per_image]
            bbox_regression_per_image = bbox_regression_per_image[foreground_idxs_per_image, :]
            anchors_per_image = anchors_per_image[foreground_idxs_per_image, :]
            target_regression = self.encode_single(matched_gt_boxes_per_image, anchors_per_image)
            bbox_loss.append(torch.nn.functional.smooth_l1_loss(bbox_regression_per_image, target_regression, reduction="sum"))
            gt_classes_target = torch.zeros((cls_logits_per_image.size(0),), dtype=targets_per_image["labels"].dtype, device=targets_per_image["labels"].device)
            gt_classes_target[foreground_idxs_per_image] = targets_per_image["labels"][foreground_matched_idxs_per_image]
            cls_targets.append(gt_classes_target)
        bbox_loss = torch.stack(bbox_loss)
        cls_targets = torch.stack(cls_targets)
        num_classes = cls_logits.size(-1)
        cls_loss = F.cross_entropy(cls_logits.view(-1, num_classes), cls_targets.view(-1), reduction="none").view(cls_targets.size())
        foreground_idxs = cls_targets > 0
        num_negative = self.neg_to_pos_ratio * foreground_idxs.sum(1, keepdim=True)
        negative_loss = cls_loss.clone()
        negative_loss[foreground_idxs] = -float("inf")
        values, idx = negative_loss.sort(1, descending=True)
        background_idxs = idx.sort(1)[1] < num_negative
        N = max(1, num_foreground)
        return {
            "bbox_regression": bbox_loss.sum() / N,
            "classification": (cls_loss[foreground_idxs].sum() + cls_loss[background_idxs].sum()) / N,
        }

    def forward(self, targets, bbox_regression, cls_logits, anchors, matched_idxs):
        return self.compute_loss(targets, {"bbox_regression": bbox_regression, "cls_logits": cls_logits}, anchors, matched_idxs)


ssd = torch.compile(SSD().train())


def make():
    torch.manual_seed(0)
    targets = [{"boxes": torch.rand(2, 4), "labels": torch.tensor([1, 2])}, {"boxes": torch.rand(1, 4), "labels": torch.tensor([2])}]
    matched = [torch.tensor([0, -1, 1, -1, -1, 0]), torch.tensor([-1, 0, -1, -1, -1, -1])]
    anchors = [torch.rand(6, 4), torch.rand(6, 4)]
    return SSD().train(), [(targets, torch.randn(2, 6, 4), torch.randn(2, 6, 3), anchors, matched)]
