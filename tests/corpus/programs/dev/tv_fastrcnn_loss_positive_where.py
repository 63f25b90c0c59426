"""torchvision fastrcnn_loss: `torch.where(labels > 0)[0]` picks positive proposals for the box loss.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/roi_heads.py:12-53
Kept: the cat of per-image labels/targets, cross entropy, the positive-index
where, labels_pos, the reshape by class, smooth_l1 over advanced indexing and
normalisation by labels.numel(); called from a box predictor head.
Simplified: 8 proposals, 3 classes.
"""
import torch
import torch.nn.functional as F


def fastrcnn_loss(class_logits, box_regression, labels, regression_targets):
    labels = torch.cat(labels, dim=0)
    regression_targets = torch.cat(regression_targets, dim=0)
    classification_loss = F.cross_entropy(class_logits, labels)
    sampled_pos_inds_subset = torch.where(labels > 0)[0]
    labels_pos = labels[sampled_pos_inds_subset]
    N, num_classes = class_logits.shape
    box_regression = box_regression.reshape(N, box_regression.size(-1) // 4, 4)
    box_loss = F.smooth_l1_loss(
        box_regression[sampled_pos_inds_subset, labels_pos],
        regression_targets[sampled_pos_inds_subset],
        beta=1 / 9,
        reduction="sum",
    )
    box_loss = box_loss / labels.numel()
    return classification_loss, box_loss


class FastRCNNPredictor(torch.nn.Module):
    def __init__(self, in_channels=6, num_classes=3):
        super().__init__()
        self.cls_score = torch.nn.Linear(in_channels, num_classes)
        self.bbox_pred = torch.nn.Linear(in_channels, num_classes * 4)

    def forward(self, box_features, labels, regression_targets):
        class_logits = self.cls_score(box_features)
        box_regression = self.bbox_pred(box_features)
        loss_classifier, loss_box_reg = fastrcnn_loss(class_logits, box_regression, labels, regression_targets)
        return {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}


predictor = torch.compile(FastRCNNPredictor().train())


def make():
    torch.manual_seed(0)
    labels = [torch.tensor([0, 1, 2, 0]), torch.tensor([2, 0, 0, 1])]
    targets = [torch.randn(4, 4), torch.randn(4, 4)]
    return FastRCNNPredictor().train(), [(torch.randn(8, 6), labels, targets)]
