"""Composer's ghost batch norm: `int(math.ceil(batch_size / self.ghost_batch_size))` chunks, `hasattr(self.batchnorm, 'momentum')`, the wrapped BatchNorm's momentum scaled and restored around the chunk loop, and a raise for small batches.

Source: mosaicml/composer@03cbf4a6a0d70495952606853b0e5cc158ebcb3b:composer/algorithms/ghost_batchnorm/ghost_batchnorm.py:18-210
Kept: apply_ghost_batchnorm's maybe_replace policy, _corresponding_ghost_batchnorm_type,
_GhostBatchNorm (forward, from_batchnorm, _scale_momentum / _unscale_momentum) and its
1d/2d/3d subclasses verbatim.
Simplified: composer.utils.module_surgery.replace_module_classes is a short recursive
replacement over named children; no Algorithm/Event/State/Logger; a small conv net.
"""
import math
from typing import Optional

import torch

_TORCH_BATCHNORM_BASE_CLASS = torch.nn.modules.batchnorm._BatchNorm


def replace_module_classes(module: torch.nn.Module, policies) -> None:
    for name, child in module.named_children():
        policy = policies.get(child.__class__)
        replacement = policy(child, 0) if policy is not None else None
        if replacement is not None:
            setattr(module, name, replacement)
        else:
            replace_module_classes(child, policies)


def apply_ghost_batchnorm(model: torch.nn.Module, ghost_batch_size: int = 32) -> None:
    """Replace batch normalization modules with ghost batch normalization modules."""

    def maybe_replace(module: torch.nn.Module, module_index: int) -> Optional[torch.nn.Module]:
        already_ghost_batchnormed = hasattr(module, '_already_ghost_batchnormed') and module._already_ghost_batchnormed
        if isinstance(module, _TORCH_BATCHNORM_BASE_CLASS) and not already_ghost_batchnormed:
            return _GhostBatchNorm.from_batchnorm(module, ghost_batch_size=ghost_batch_size)

    # we have to specify class names explicitly because replace_module_classes
    # now checks if `module.__class__ == cls`, rather than `isinstance(module, cls)`
    transforms = {cls: maybe_replace for cls in [torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d]}
    replace_module_classes(model, policies=transforms)


def _corresponding_ghost_batchnorm_type(batchnorm: torch.nn.Module):
    if isinstance(batchnorm, torch.nn.BatchNorm1d):
        return GhostBatchNorm1d
    if isinstance(batchnorm, torch.nn.BatchNorm2d):
        return GhostBatchNorm2d
    if isinstance(batchnorm, torch.nn.BatchNorm3d):
        return GhostBatchNorm3d
    raise ValueError(f'Input was of type {type(batchnorm)}, not one of '
                     'torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d')


class _GhostBatchNorm(torch.nn.Module):
    """`Ghost batch normalization <https://arxiv.org/abs/1705.08741>`_ layer."""

    def __init__(self, base_batchnorm: _TORCH_BATCHNORM_BASE_CLASS, ghost_batch_size: int = 32):
        super().__init__()
        self.ghost_batch_size = ghost_batch_size
        self.batchnorm = base_batchnorm
        self.batchnorm._already_ghost_batchnormed = True  # Mark to avoid rewrapping on duplicate calls # pyright: ignore[reportGeneralTypeIssues]

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # type: ignore
        batch_size = input.shape[0]

        if batch_size < self.ghost_batch_size:
            raise ValueError(f'Worker batch size {batch_size} < ghost_batch_size {self.ghost_batch_size}')

        nchunks: int = int(math.ceil(batch_size / self.ghost_batch_size))
        has_momentum: bool = hasattr(self.batchnorm, 'momentum')
        original_momentum: float = self.batchnorm.momentum

        if self.training and has_momentum:
            # applying the same batchnorm multiple times greatly increases
            # the variance of the moving average statistics; reduce the
            # exponential moving average constant proportionally
            # to compensate.
            self._scale_momentum(nchunks)

        normalized_chunks = [self.batchnorm(chunk) for chunk in input.chunk(nchunks, 0)]

        if self.training and has_momentum:
            self._unscale_momentum(original_momentum)

        return torch.cat(normalized_chunks, dim=0)

    @staticmethod
    def from_batchnorm(module: torch.nn.Module, ghost_batch_size: int) -> '_GhostBatchNorm':
        assert isinstance(module, _TORCH_BATCHNORM_BASE_CLASS), 'Module is not a BatchNorm subclass!'
        bn_type = _corresponding_ghost_batchnorm_type(module)
        return bn_type(ghost_batch_size=ghost_batch_size, base_batchnorm=module)

    @torch.jit.unused
    def _scale_momentum(self, nchunks: int):
        self.batchnorm.momentum = float(self.batchnorm.momentum) / nchunks

    @torch.jit.unused
    def _unscale_momentum(self, original_momentum: float):
        self.batchnorm.momentum = original_momentum


class GhostBatchNorm1d(_GhostBatchNorm):
    pass


class GhostBatchNorm2d(_GhostBatchNorm):
    pass


class GhostBatchNorm3d(_GhostBatchNorm):
    pass


def build_model() -> torch.nn.Module:
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 4 * 4, 6),
        torch.nn.BatchNorm1d(6),
    )
    apply_ghost_batchnorm(model, ghost_batch_size=4)
    return model


model = build_model()
model.compile()

RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    return build_model(), [(torch.randn(8, 3, 4, 4),), (torch.randn(6, 3, 4, 4),), (torch.randn(2, 3, 4, 4),)]
