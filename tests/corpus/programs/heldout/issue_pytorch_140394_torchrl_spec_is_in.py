"""torchrl's safe-action hook: `if not _spec.is_in(item):` where `is_in` ANDs two `.all()` bound checks.

Source: https://github.com/pytorch/pytorch/issues/140394 (torchrl/data/tensor_specs.py:2263 and
torchrl/modules/tensordict_module/common.py:85 from the logged stack)
Kept: the `BoundedTensorSpec.is_in` expression `(val >= low.to(val.device)).all() and (val <= high...).all()`,
the hook's `if not _spec.is_in(item): item = _spec.project(item)` and a compiled policy module using it.
Simplified: a tiny spec class with `space.low/high`; the policy is one Linear.
"""
import torch
from torch import nn


class ContinuousBox:
    def __init__(self, low, high):
        self.low = low
        self.high = high


class BoundedTensorSpec:
    def __init__(self, low, high):
        self.space = ContinuousBox(low, high)

    def is_in(self, val):
        within_bounds = (val >= self.space.low.to(val.device)).all() and (
            val <= self.space.high.to(val.device)
        ).all()
        return within_bounds

    def project(self, val):
        return val.clamp(self.space.low, self.space.high)


class SafeModule(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.module = nn.Linear(3, 2)
        self.spec = spec

    def _forward_hook_safe_action(self, item):
        _spec = self.spec
        if not _spec.is_in(item):
            item = _spec.project(item)
        return item

    def forward(self, obs):
        return self._forward_hook_safe_action(self.module(obs))


def make_policy():
    spec = BoundedTensorSpec(-torch.ones(2), torch.ones(2))
    return torch.compile(SafeModule(spec))


def make():
    torch.manual_seed(0)
    spec = BoundedTensorSpec(-torch.ones(2), torch.ones(2))
    return SafeModule(spec), [(torch.zeros(4, 3),), (torch.randn(4, 3) * 10,)]
