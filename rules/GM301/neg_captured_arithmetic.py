"""GM301 negative: with `capture_scalar_outputs` on, scalars used in arithmetic and slicing are traced.

Nothing here may be flagged (GM301 and GM402 read the setting), and Dynamo must not break.
"""
import torch
from torch import nn

torch._dynamo.config.capture_scalar_outputs = True


class LengthScale(nn.Module):
    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        longest = int(lengths.max())
        scale = x.abs().max().item()
        return x[:longest] / scale


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return LengthScale(), [(torch.randn(6, 2), torch.tensor([3, 5]))]


compiled = torch.compile(LengthScale())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
