"""GM301 with `capture_scalar_outputs` on: a tensor count given to `chunk` still breaks.

The switch captures `(mask > 0).sum()` as an unbacked number, and a size such as `new_zeros`'s
traces, but `chunk` guards on the count and Dynamo breaks there (measured, torch 2.13).
"""
import torch
from torch import nn

torch._dynamo.config.capture_scalar_outputs = True


class SplitByCount(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        groups = (mask > 0).sum()
        first = x.chunk(groups)[0]
        pad = x.new_zeros(groups)
        return first.sum() + pad.sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return SplitByCount(), [(torch.randn(6), torch.tensor([1, 1, 0]))]


compiled = torch.compile(SplitByCount())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
