"""Composer's cutmix_batch: the box comes from `np.random.beta` / `np.random.randint` / `np.clip` in `_rand_bbox` and slices the batch (`X_cutmix[:, :, rx:rw, ry:rh] = X_cutmix[shuffled_idx, ...]`), `torch.randperm` indices, one-hot targets by dtype.

Source: mosaicml/composer@01f3028f9c34f1f667a3d26b42cb6a5d72939be4:composer/algorithms/cutmix/cutmix.py:27-340
Also: composer/loss/utils.py (check_for_index_targets).
Kept: cutmix_batch, _gen_indices, _gen_cutmix_coef, _rand_bbox and _adjust_lambda verbatim;
both the functional call (no bbox, no indices) and CutMix.apply's call (precomputed bbox
and indices) of cutmix_batch.
Simplified: no Algorithm/Event/State classes; the algorithm's apply is a plain function.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional as F


def check_for_index_targets(targets: torch.Tensor) -> bool:
    """Checks if a given set of targets are indices by looking at the type."""
    index_dtypes = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
    return targets.dtype in index_dtypes


def cutmix_batch(input: Tensor,
                 target: Tensor,
                 num_classes: int,
                 length: Optional[float] = None,
                 alpha: float = 1.,
                 bbox: Optional[Tuple] = None,
                 indices: Optional[torch.Tensor] = None,
                 uniform_sampling: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Create new samples using combinations of pairs of samples."""
    if bbox is not None and length is not None:
        raise ValueError(f"Cannot provide both length and bbox; got {length} and {bbox}")

    # Create shuffled indicies across the batch in preparation for cutting and mixing.
    # Use given indices if there are any.
    if indices is None:
        shuffled_idx = _gen_indices(input)
    else:
        shuffled_idx = indices

    H, W = input.shape[-2], input.shape[-1]

    # figure out fraction of area to cut
    if length is None:
        cutmix_lambda = _gen_cutmix_coef(alpha)
    else:
        cut_w = int(length * W)
        cut_h = int(length * H)
        cutmix_lambda = (cut_w * cut_h) / (H * W)

    # Create the new inputs.
    X_cutmix = torch.clone(input)
    # Sample a rectangular box using lambda. Use variable names from the paper.
    if bbox:
        rx, ry, rw, rh = bbox[0], bbox[1], bbox[2], bbox[3]
        box_area = (rw - rx) * (rh - ry)
        cutmix_lambda = box_area / (H * W)
    else:
        rx, ry, rw, rh = _rand_bbox(input.shape[2], input.shape[3], cutmix_lambda, uniform_sampling=uniform_sampling)
        bbox = (rx, ry, rw, rh)

    # Fill in the box with a part of a random image.
    X_cutmix[:, :, rx:rw, ry:rh] = X_cutmix[shuffled_idx, :, rx:rw, ry:rh]
    # adjust lambda to exactly match pixel ratio. This is an implementation detail taken from
    # the original implementation, and implies lambda is not actually beta distributed.
    adjusted_lambda = _adjust_lambda(cutmix_lambda, input, bbox)

    # Make a shuffled version of y for interpolation
    y_shuffled = target[shuffled_idx]
    # Interpolate between labels using the adjusted lambda
    # First check if labels are indices. If so, convert them to onehots.
    # This is under the assumption that the loss expects torch.LongTensor, which is true for pytorch cross_entropy
    if check_for_index_targets(target):
        y_onehot = F.one_hot(target, num_classes=num_classes)
        y_shuffled_onehot = F.one_hot(y_shuffled, num_classes=num_classes)
        y_cutmix = adjusted_lambda * y_onehot + (1 - adjusted_lambda) * y_shuffled_onehot
    else:
        y_cutmix = adjusted_lambda * target + (1 - adjusted_lambda) * y_shuffled

    return X_cutmix, y_cutmix


def _gen_indices(x: Tensor) -> Tensor:
    """Generates indices of a random permutation of elements of a batch."""
    return torch.randperm(x.shape[0])


def _gen_cutmix_coef(alpha: float) -> float:
    """Generates lambda from ``Beta(alpha, alpha)``"""
    # First check if alpha is positive.
    assert alpha >= 0
    # Draw the area parameter from a beta distribution.
    # Check here is needed because beta distribution requires alpha > 0
    # but alpha = 0 is fine for cutmix.
    if alpha == 0:
        cutmix_lambda = 0
    else:
        cutmix_lambda = np.random.beta(alpha, alpha)
    return cutmix_lambda


def _rand_bbox(W: int,
               H: int,
               cutmix_lambda: float,
               cx: Optional[int] = None,
               cy: Optional[int] = None,
               uniform_sampling: bool = False) -> Tuple[int, int, int, int]:
    """Randomly samples a bounding box with area determined by cutmix_lambda."""
    cut_ratio = np.sqrt(1.0 - cutmix_lambda)
    cut_w = int(W * cut_ratio)
    cut_h = int(H * cut_ratio)

    # uniform
    if cx is None:
        if uniform_sampling is True:
            cx = np.random.randint(-cut_w // 2, high=W + cut_w // 2)
        else:
            cx = np.random.randint(W)
    if cy is None:
        if uniform_sampling is True:
            cy = np.random.randint(-cut_h // 2, high=H + cut_h // 2)
        else:
            cy = np.random.randint(H)

    bbx1 = np.clip(cx - cut_w // 2, 0, W)
    bby1 = np.clip(cy - cut_h // 2, 0, H)
    bbx2 = np.clip(cx + cut_w // 2, 0, W)
    bby2 = np.clip(cy + cut_h // 2, 0, H)

    return bbx1, bby1, bbx2, bby2


def _adjust_lambda(cutmix_lambda: float, x: Tensor, bbox: Tuple) -> float:
    """Rescale the cutmix lambda according to the size of the clipped bounding box."""
    rx, ry, rw, rh = bbox[0], bbox[1], bbox[2], bbox[3]
    adjusted_lambda = 1 - ((rw - rx) * (rh - ry) / (x.size()[-1] * x.size()[-2]))
    return adjusted_lambda


def apply_cutmix(input: Tensor, target: Tensor, num_classes: int, alpha: float = 1., uniform_sampling: bool = False):
    """CutMix.apply without the State plumbing: indices, lambda and bbox drawn up front."""
    indices = _gen_indices(input)
    _cutmix_lambda = _gen_cutmix_coef(alpha)
    bbox = _rand_bbox(input.shape[2], input.shape[3], _cutmix_lambda, uniform_sampling=uniform_sampling)
    return cutmix_batch(input=input, target=target, num_classes=num_classes, alpha=alpha, bbox=bbox, indices=indices)


cutmix = torch.compile(cutmix_batch)


def make():
    torch.manual_seed(0)
    x = torch.randn(4, 2, 8, 8)
    y = torch.randint(0, 5, (4,))
    y_soft = F.one_hot(y, 5).float() * 0.9 + 0.02
    return cutmix_batch, [
        (x, y, 5),
        (x, y_soft, 5, 0.5),
        (x, y, 5, None, 0.2, None, None, True),
        (x, y, 5, None, 1.0, (1, 2, 5, 6), torch.tensor([3, 2, 1, 0])),
    ]
