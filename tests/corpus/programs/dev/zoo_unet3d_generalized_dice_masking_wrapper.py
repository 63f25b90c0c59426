"""pytorch-3dunet GeneralizedDiceLoss behind MaskingLossWrapper (`ignore_index`): `target.clone().ne_(...)`, `mask.requires_grad = False`, channel-first `flatten`, a `input.size(0) == 1` branch that adds a background channel, `w_l.requires_grad = False` on an intermediate.

Source: wolny/pytorch-3dunet@a33e2c7038a0b51296ca4f99b0f0ed4b61740705:pytorch3dunet/unet3d/losses.py:40-185
Also: losses.py:253-343 (flatten, get_loss_criterion, _create_loss), same commit; the trainer
calls `self.loss_criterion(logits, target)`.
Kept: MaskingLossWrapper, SkipLastTargetChannelWrapper, _AbstractDiceLoss, GeneralizedDiceLoss,
flatten, get_loss_criterion verbatim.
Simplified: `get_logger` (stdout handler with timestamps) -> `logging.getLogger`; _create_loss keeps
the branches of the losses defined here; 3x4x4 volumes with 1 or 3 channels.
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


class _AbstractDiceLoss(nn.Module):
    """Base class for different implementations of Dice loss."""

    def __init__(self, weight=None, normalization="sigmoid"):
        super().__init__()
        self.register_buffer("weight", weight)
        assert normalization in ["sigmoid", "softmax", "none"]
        if normalization == "sigmoid":
            self.normalization = nn.Sigmoid()
        elif normalization == "softmax":
            self.normalization = nn.Softmax(dim=1)
        else:
            self.normalization = lambda x: x

    def dice(self, input, target, weight):
        # actual Dice score computation; to be implemented by the subclass
        raise NotImplementedError

    def forward(self, input, target):
        # get probabilities from logits
        input = self.normalization(input)

        # compute per channel Dice coefficient
        per_channel_dice = self.dice(input, target, weight=self.weight)

        # average Dice score across all channels/classes
        return 1.0 - torch.mean(per_channel_dice)


class GeneralizedDiceLoss(_AbstractDiceLoss):
    """Computes Generalized Dice Loss (GDL) as described in https://arxiv.org/pdf/1707.03237.pdf."""

    def __init__(self, normalization="sigmoid", epsilon=1e-6):
        super().__init__(weight=None, normalization=normalization)
        self.epsilon = epsilon

    def dice(self, input, target, weight):
        assert input.size() == target.size(), "'input' and 'target' must have the same shape"

        input = flatten(input)
        target = flatten(target)
        target = target.float()

        if input.size(0) == 1:
            # for GDL to make sense we need at least 2 channels (see https://arxiv.org/pdf/1707.03237.pdf)
            # put foreground and background voxels in separate channels
            input = torch.cat((input, 1 - input), dim=0)
            target = torch.cat((target, 1 - target), dim=0)

        # GDL weighting: the contribution of each label is corrected by the inverse of its volume
        w_l = target.sum(-1)
        w_l = 1 / (w_l * w_l).clamp(min=self.epsilon)
        w_l.requires_grad = False

        intersect = (input * target).sum(-1)
        intersect = intersect * w_l

        denominator = (input + target).sum(-1)
        denominator = (denominator * w_l).clamp(min=self.epsilon)

        return 2 * (intersect.sum() / denominator.sum())


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
    elif name == "GeneralizedDiceLoss":
        normalization = loss_config.get("normalization", "sigmoid")
        return GeneralizedDiceLoss(normalization=normalization)
    elif name == "MSELoss":
        return MSELoss()
    elif name == "SmoothL1Loss":
        return SmoothL1Loss()
    elif name == "L1Loss":
        return L1Loss()
    else:
        raise RuntimeError(f"Unsupported loss function: '{name}'")


def build_criterion():
    config = {"device": "cpu",
              "loss": {"name": "GeneralizedDiceLoss", "ignore_index": -1, "normalization": "sigmoid"}}
    return get_loss_criterion(config)


def setup_training():
    loss_criterion = torch.compile(build_criterion())
    return loss_criterion


def make():
    torch.manual_seed(0)
    logits1 = torch.randn(2, 1, 3, 4, 4)
    target1 = (torch.rand(2, 1, 3, 4, 4) > 0.5).float()
    target1[0, 0, 0] = -1
    logits3 = torch.randn(1, 3, 3, 4, 4)
    target3 = (torch.rand(1, 3, 3, 4, 4) > 0.5).float()
    return build_criterion(), [(logits1, target1), (logits3, target3)]
