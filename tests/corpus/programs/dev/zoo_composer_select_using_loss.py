"""Composer's Selective Backprop `select_using_loss`: `inspect.signature(loss_fun)` check, `int(keep * N)`, and a NumPy `np.random.choice` over loss-ranked percentiles that indexes the batch.

Source: mosaicml/composer@011b276feaa79f9f0b672c20406a2081cacc931d:composer/algorithms/selective_backprop/selective_backprop.py:50-142,232-251
Kept: select_using_loss verbatim (interpolate modes, the signature check, the no_grad
selection pass), and the way SelectiveBackprop.apply wraps the model
(`model = lambda X: state.model((X, None))`) and the loss (`loss(p, y, reduction="none")`).
Simplified: the ComposerModel is a small classifier whose `loss(outputs, batch, reduction)`
is cross entropy; no Event/State/Logger plumbing.
"""
from __future__ import annotations

import inspect
from typing import Callable, Sequence, Tuple, Union

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


def select_using_loss(input: torch.Tensor,
                      target: torch.Tensor,
                      model: Callable[[Union[torch.Tensor, Sequence[torch.Tensor]]], torch.Tensor],
                      loss_fun: Callable,
                      keep: float = 0.5,
                      scale_factor: float = 1) -> Tuple[torch.Tensor, torch.Tensor]:
    """Selectively backpropagate gradients from a subset of each batch (`Jiang et al, 2019 <https://\\
    arxiv.org/abs/1910.00762>`_).
    """
    INTERPOLATE_MODES = {3: "linear", 4: "bilinear", 5: "trilinear"}

    interp_mode = "bilinear"
    if scale_factor != 1:
        if input.dim() not in INTERPOLATE_MODES:
            raise ValueError(f"Input must be 3D, 4D, or 5D if scale_factor != 1, got {input.dim()}")
        interp_mode = INTERPOLATE_MODES[input.dim()]

    if scale_factor > 1:
        raise ValueError("scale_factor must be <= 1")

    if callable(loss_fun):
        sig = inspect.signature(loss_fun)
        if not "reduction" in sig.parameters:
            raise TypeError("Loss function `loss_fun` must take a keyword argument `reduction`.")
    else:
        raise TypeError("Loss function must be callable")

    with torch.no_grad():
        N = input.shape[0]

        # Maybe interpolate
        if scale_factor < 1:
            X_scaled = F.interpolate(input, scale_factor=scale_factor, mode=interp_mode)
        else:
            X_scaled = input

        # Get per-examples losses
        out = model(X_scaled)
        losses = loss_fun(out, target, reduction="none")

        # Sort losses
        sorted_idx = torch.argsort(losses)
        n_select = int(keep * N)

        # Sample by loss
        percs = np.arange(0.5, N, 1) / N
        probs = percs**((1.0 / keep) - 1.0)
        probs = probs / np.sum(probs)
        select_percs_idx = np.random.choice(N, n_select, replace=False, p=probs)
        select_idx = sorted_idx[select_percs_idx]

    return input[select_idx], target[select_idx]


class SimpleConvClassifier(nn.Module):
    """A ComposerModel-style classifier: forward takes `(input, target)`, `loss` takes a reduction."""

    def __init__(self, num_classes: int = 3):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, num_classes)

    def forward(self, batch):
        x, _ = batch
        return self.fc(self.pool(F.relu(self.conv(x))).flatten(1))

    def loss(self, outputs, batch, reduction="mean"):
        _, y = batch
        return F.cross_entropy(outputs, y, reduction=reduction)


def wrap_model_and_loss(composer_model: SimpleConvClassifier):
    # Model expected to only take in input, not the full batch
    model = lambda X: composer_model((X, None))

    def loss(p, y, reduction="none"):
        return composer_model.loss(p, (torch.Tensor(), y), reduction=reduction)

    return model, loss


def apply_selective_backprop(composer_model: SimpleConvClassifier, input, target, keep=0.5, scale_factor=0.5):
    model, loss = wrap_model_and_loss(composer_model)
    select = torch.compile(select_using_loss)
    return select(input, target, model, loss, keep, scale_factor)


def make():
    torch.manual_seed(0)
    model, loss = wrap_model_and_loss(SimpleConvClassifier())
    x = torch.randn(8, 2, 8, 8)
    y = torch.randint(0, 3, (8,))
    return select_using_loss, [(x, y, model, loss, 0.5, 0.5), (x, y, model, loss, 0.25, 1)]
