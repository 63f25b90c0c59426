"""ClassyVision's LabelSmoothingCrossEntropyLoss: class-index targets go through `convert_to_one_hot`, which asserts `torch.max(targets).item() < classes`, then a SoftTargetCrossEntropyLoss built with normalize_targets=False.

Source: facebookresearch/ClassyVision@08a82e88fcfa143933832994ace2424c03dd43b8:classy_vision/losses/label_smoothing_loss.py:18-108
Also: classy_vision/generic/util.py:409-422 (convert_to_one_hot),
classy_vision/losses/soft_target_cross_entropy_loss.py:17-92.
Kept: compute_valid_targets (shape-list test, ignore mask), smooth_targets
with its numpy-eps and `if classes > 0`, forward's assert, the inner loss's
`target.ndim == 1` conversion, normalize flag and "mean"/"none" reductions.
Simplified: ClassyLoss is nn.Module; no registry / from_config; 4 classes.
The inner loss's own `target.ndim == 1` conversion is not reached from this
entry (LabelSmoothingCrossEntropyLoss always passes 2-D targets).
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def convert_to_one_hot(targets: torch.Tensor, classes) -> torch.Tensor:
    """
    This function converts target class indices to one-hot vectors,
    given the number of classes.

    """
    assert (
        torch.max(targets).item() < classes
    ), "Class Index must be less than number of classes"
    one_hot_targets = torch.zeros(
        (targets.shape[0], classes), dtype=torch.long, device=targets.device
    )
    one_hot_targets.scatter_(1, targets.long(), 1)
    return one_hot_targets


class ClassyLoss(nn.Module):
    pass


class SoftTargetCrossEntropyLoss(ClassyLoss):
    def __init__(self, ignore_index=-100, reduction="mean", normalize_targets=True):
        super(SoftTargetCrossEntropyLoss, self).__init__()
        self._ignore_index = ignore_index
        self._reduction = reduction
        assert isinstance(normalize_targets, bool)
        self._normalize_targets = normalize_targets
        if self._reduction not in ["none", "mean"]:
            raise NotImplementedError(
                'reduction type "{}" not implemented'.format(self._reduction)
            )
        self._eps = torch.finfo(torch.float32).eps

    def forward(self, output, target):
        # check if targets are inputted as class integers
        if target.ndim == 1:
            assert (
                output.shape[0] == target.shape[0]
            ), "SoftTargetCrossEntropyLoss requires output and target to have same batch size"
            target = convert_to_one_hot(target.view(-1, 1), output.shape[1])
        assert output.shape == target.shape, (
            "SoftTargetCrossEntropyLoss requires output and target to be same "
            f"shape: {output.shape} != {target.shape}"
        )
        valid_mask = target != self._ignore_index
        valid_targets = target.float() * valid_mask.float()
        if self._normalize_targets:
            valid_targets /= self._eps + valid_targets.sum(dim=1, keepdim=True)
        per_sample_per_target_loss = -valid_targets * F.log_softmax(output, -1)
        per_sample_loss = torch.sum(per_sample_per_target_loss, -1)
        # perform reduction
        if self._reduction == "mean":
            # normalize based on the number of samples with > 0 non-ignored targets
            loss = per_sample_loss.sum() / torch.sum(
                (torch.sum(valid_mask, -1) > 0)
            ).clamp(min=1)
        elif self._reduction == "none":
            loss = per_sample_loss

        return loss


class LabelSmoothingCrossEntropyLoss(ClassyLoss):
    def __init__(self, ignore_index=-100, reduction="mean", smoothing_param=None):
        super().__init__()
        self._ignore_index = ignore_index
        self._reduction = reduction
        self._smoothing_param = smoothing_param
        self.loss_function = SoftTargetCrossEntropyLoss(
            self._ignore_index, self._reduction, normalize_targets=False
        )
        self._eps = np.finfo(np.float32).eps

    def compute_valid_targets(self, target, classes):

        """
        This function takes one-hot or index target vectors and computes valid one-hot
        target vectors, based on ignore index value
        """
        target_shape_list = list(target.size())

        valid_mask = target != self._ignore_index
        valid_targets = target.float() * valid_mask.float()

        # check if targets are inputted as class integers
        if len(target_shape_list) == 1 or (
            len(target_shape_list) == 2 and target_shape_list[1] == 1
        ):

            valid_targets = convert_to_one_hot(valid_targets.view(-1, 1), classes)
            valid_targets = valid_targets.float() * valid_mask.view(-1, 1).float()

        return valid_targets

    def smooth_targets(self, valid_targets, classes):
        valid_targets /= self._eps + valid_targets.sum(dim=1, keepdim=True)
        if classes > 0:
            smoothed_targets = valid_targets + (self._smoothing_param / classes)
        smoothed_targets /= self._eps + smoothed_targets.sum(dim=1, keepdim=True)

        return smoothed_targets

    def forward(self, output, target):
        valid_targets = self.compute_valid_targets(
            target=target, classes=output.shape[1]
        )
        assert (
            valid_targets.shape == output.shape
        ), "LabelSmoothingCrossEntropyLoss requires output and target to be same size"
        smoothed_targets = self.smooth_targets(
            valid_targets=valid_targets, classes=output.shape[1]
        )
        return self.loss_function(output, smoothed_targets)


loss_fn = torch.compile(LabelSmoothingCrossEntropyLoss(smoothing_param=0.1))


def make():
    torch.manual_seed(0)
    output = torch.randn(3, 4)
    index_targets = torch.tensor([0, 3, -100])
    column_targets = torch.tensor([[1], [2], [2]])
    one_hot_targets = torch.tensor([[0, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 1]])
    return LabelSmoothingCrossEntropyLoss(smoothing_param=0.1), [
        (output, index_targets),
        (output, column_targets),
        (output, one_hot_targets),
    ]
