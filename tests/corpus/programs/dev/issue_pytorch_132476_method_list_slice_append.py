"""A compiled method that trims and appends to a list attribute (`self.ets = self.ets[-3:]`).

Source: pytorch/pytorch#132476 (https://github.com/pytorch/pytorch/issues/132476)
Issue 1 of the stable_diffusion user-empathy-day report: a scheduler-like object keeps the last few
model outputs in a list on `self` (the pattern of multistep schedulers' `ets`) inside a compiled
method; Dynamo failed on it before pytorch#132912.
Kept: the Mock class and its `@torch.compile(backend="eager")` method as posted.
Simplified: nothing.
"""
import torch


class Mock:
    def __init__(self):
        self.ets = []
        self.counter = 0

    @torch.compile(backend="eager")
    def run(self, x):
        self.ets = self.ets[-3:]
        self.ets.append(x)
        return torch.sin(x)


def make():
    torch.manual_seed(0)
    mock = Mock()
    run = Mock.run._torchdynamo_orig_callable.__get__(mock)
    return run, [(torch.randn(4),), (torch.randn(4),), (torch.randn(4),), (torch.randn(4),), (torch.randn(4),)]
