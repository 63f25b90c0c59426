"""GM507 bad: a dropout mask wrapped in `torch.autograd.Variable` (flair's `LockedDropout`).

`Variable` has been a no-op wrapper since PyTorch 0.4, but it lives in a torch module Dynamo
skips: the call breaks the graph (GB0007). The tensor itself does the same job.
"""
import torch
from torch import nn


class LockedDropout(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = x.new_empty(1, x.size(1), x.size(2)).bernoulli_(0.5)
        mask = torch.autograd.Variable(m, requires_grad=False) / 0.5
        return mask.expand_as(x) * x


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return LockedDropout(), [(torch.randn(2, 3, 4),)]


compiled = torch.compile(LockedDropout())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
