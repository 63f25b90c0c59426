"""pytorch-3dunet WeightedSmoothL1Loss: `reduction="none"` SmoothL1 via `super().forward`, then boolean-mask read-modify-write `l1[mask] = l1[mask] * self.weight` on a threshold mask, built through get_loss_criterion.

Source: wolny/pytorch-3dunet@a33e2c7038a0b51296ca4f99b0f0ed4b61740705:pytorch3dunet/unet3d/losses.py:230-251
Also: losses.py:40-89 (MaskingLossWrapper, SkipLastTargetChannelWrapper), 253-343 (flatten,
get_loss_criterion, _create_loss), same commit; the trainer calls `self.loss_criterion(logits, target)`.
Kept: those verbatim (the config `pop` plumbing, the wrapper choice, `loss.to(device)`).
Simplified: `get_logger` (stdout handler with timestamps) -> `logging.getLogger`; _create_loss keeps
the branches of the losses defined here; a 1x1x3x4x4 volume.
"""
import logging

import torch
import torch.nn.functional as F
from torch import nn as nn
from torch.nn import L1Loss, MSELoss, SmoothL1Loss

logger = logging.getLogger("Loss")


def flatten(tensor):
    """Flattens a given tensor such that the channel axis is first.

    The shapes are transformed as follows: (N, C, D, H, W) -> (C, N * D * H * W)
    """
    # number of channels
    C = tensor.size(1)
    # new axis order
    axis_order = (1, 0) + tuple(range(2, tensor.dim()))
    # Transpose: (N, C, D, H, W) -> (C, N, D, H, W)
    transposed = tensor.permute(axis_order)
    # Flatten: (C, N, D, H, W) -> (C, N * D * H * W)
    return transposed.contiguous().view(C, -1)


class MaskingLossWrapper(nn.Module):
    """Loss wrapper which prevents the gradient of the loss to be computed where target is equal to `ignore_index`."""

    def __init__(self, loss, ignore_index):
        super().__init__()
        assert ignore_index is not None, "ignore_index cannot be None"
        self.loss = loss
        self.ignore_index = ignore_index

    def forward(self, input, target):
        mask = target.clone().ne_(self.ignore_index)
        mask.requires_grad = False

        # mask out input/target so that the gradient is zero where on the mask
        input = input * mask
        target = target * mask

        # forward masked input and target to the loss
        return self.loss(input, target)


class SkipLastTargetChannelWrapper(nn.Module):
    """Loss wrapper which removes additional target channel."""

    def __init__(self, loss, squeeze_channel=False):
        super().__init__()
        self.loss = loss
        self.squeeze_channel = squeeze_channel

    def forward(self, input, target):
        assert target.size(1) > 1, "Target tensor has a singleton channel dimension, cannot remove channel"

        # skips last target channel if needed
        target = target[:, :-1, ...]

        if self.squeeze_channel:
            # squeeze channel dimension
            target = torch.squeeze(target, dim=1)
        return self.loss(input, target)


class WeightedSmoothL1Loss(nn.SmoothL1Loss):
    """A variant of SmoothL1Loss where the loss is weighted by a constant factor
    when the target value is below or above a certain threshold."""

    def __init__(self, threshold, initial_weight, apply_below_threshold=True):
        super().__init__(reduction="none")
        self.threshold = threshold
        self.apply_below_threshold = apply_below_threshold
        self.weight = initial_weight

    def forward(self, input, target):
        l1 = super().forward(input, target)

        if self.apply_below_threshold:
            mask = target < self.threshold
        else:
            mask = target >= self.threshold

        l1[mask] = l1[mask] * self.weight

        return l1.mean()


def get_loss_criterion(config):
    """Returns the loss function based on provided configuration"""
    assert "loss" in config, "Could not find loss function configuration"
    device = config.get("device", None)
    assert device, "Device not specified in the config file and could not be inferred automatically"

    loss_config = config["loss"]
    name = loss_config.pop("name")
    logger.info(f"Creating loss function: {name}")

    ignore_index = loss_config.pop("ignore_index", None)
    skip_last_target = loss_config.pop("skip_last_target", False)
    weight = loss_config.pop("weight", None)

    if weight is not None:
        weight = torch.tensor(weight).float()
        logger.info(f"Using class weights: {weight}")

    pos_weight = loss_config.pop("pos_weight", None)
    if pos_weight is not None:
        pos_weight = torch.tensor(pos_weight)

    loss = _create_loss(name, loss_config, weight, ignore_index, pos_weight)

    if not (ignore_index is None or name in ["CrossEntropyLoss", "WeightedCrossEntropyLoss"]):
        # use MaskingLossWrapper only for non-cross-entropy losses, since CE losses allow specifying 'ignore_index' directly
        loss = MaskingLossWrapper(loss, ignore_index)

    if skip_last_target:
        loss = SkipLastTargetChannelWrapper(loss, loss_config.get("squeeze_channel", False))

    loss.to(device)

    return loss


def _create_loss(name, loss_config, weight, ignore_index, pos_weight):
    if name == "BCEWithLogitsLoss":
        return nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    elif name == "CrossEntropyLoss":
        if ignore_index is None:
            ignore_index = -100  # use the default 'ignore_index' as defined in the CrossEntropyLoss
        return nn.CrossEntropyLoss(weight=weight, ignore_index=ignore_index)
    elif name == "MSELoss":
        return MSELoss()
    elif name == "SmoothL1Loss":
        return SmoothL1Loss()
    elif name == "L1Loss":
        return L1Loss()
    elif name == "WeightedSmoothL1Loss":
        return WeightedSmoothL1Loss(
            threshold=loss_config["threshold"],
            initial_weight=loss_config["initial_weight"],
            apply_below_threshold=loss_config.get("apply_below_threshold", True),
        )
    else:
        raise RuntimeError(f"Unsupported loss function: '{name}'")


def build_criterion():
    config = {"device": "cpu",
              "loss": {"name": "WeightedSmoothL1Loss", "threshold": 0.5, "initial_weight": 0.1}}
    return get_loss_criterion(config)


def setup_training():
    loss_criterion = torch.compile(build_criterion())
    return loss_criterion


def make():
    torch.manual_seed(0)
    output = torch.randn(1, 1, 3, 4, 4)
    target = torch.rand(1, 1, 3, 4, 4)
    return build_criterion(), [(output, target), (output, torch.full((1, 1, 3, 4, 4), 0.9))]
