"""torchvision RetinaNet classification loss: boolean-mask indexing of matched targets, `max(1, num_foreground)` on a tensor.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/retinanet.py:158-189; torchvision/ops/focal_loss.py:7-61
Kept: RetinaNetClassificationHead.compute_loss (per-image zip, the foreground
mask, its sum, masked advanced-index assignment of one-hot targets, the
BETWEEN_THRESHOLDS valid mask, focal loss over masked rows, division by
max(1, num_foreground)) and _sum.
Simplified: 6 anchors, 3 classes, 2 images.
"""
import torch
import torch.nn.functional as F


def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2, reduction: str = "none"):
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return loss


def _sum(x):
    res = x[0]
    for i in x[1:]:
        res = res + i
    return res


class RetinaNetClassificationHead(torch.nn.Module):
    BETWEEN_THRESHOLDS = -2

    def __init__(self, in_channels=4, num_classes=3):
        super().__init__()
        self.cls_logits = torch.nn.Linear(in_channels, num_classes)

    def compute_loss(self, targets, head_outputs, matched_idxs):
        losses = []
        cls_logits = head_outputs["cls_logits"]
        for targets_per_image, cls_logits_per_image, matched_idxs_per_image in zip(targets, cls_logits, matched_idxs):
            foreground_idxs_per_image = matched_idxs_per_image >= 0
            num_foreground = foreground_idxs_per_image.sum()
            gt_classes_target = torch.zeros_like(cls_logits_per_image)
            gt_classes_target[
                foreground_idxs_per_image,
                targets_per_image["labels"][matched_idxs_per_image[foreground_idxs_per_image]],
            ] = 1.0
            valid_idxs_per_image = matched_idxs_per_image != self.BETWEEN_THRESHOLDS
            losses.append(
                sigmoid_focal_loss(cls_logits_per_image[valid_idxs_per_image], gt_classes_target[valid_idxs_per_image], reduction="sum")
                / max(1, num_foreground)
            )
        return _sum(losses) / len(targets)

    def forward(self, features, targets, matched_idxs):
        return self.compute_loss(targets, {"cls_logits": self.cls_logits(features)}, matched_idxs)


head = torch.compile(RetinaNetClassificationHead())


def make():
    torch.manual_seed(0)
    targets = [{"labels": torch.tensor([1, 2])}, {"labels": torch.tensor([0])}]
    matched = [torch.tensor([0, -1, 1, -2, -1, 0]), torch.tensor([-1, -1, 0, -2, -2, -1])]
    return RetinaNetClassificationHead(), [(torch.randn(2, 6, 4), targets, matched)]
