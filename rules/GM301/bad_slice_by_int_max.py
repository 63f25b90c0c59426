"""GM301 bad: a slice bound taken from `int(t)`: the break is at the conversion; the slice then takes a Python int."""
import torch
from torch import nn


class TrimToLongest(nn.Module):
    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        longest = int(lengths.max())
        return x[:, :longest] * 2


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    x = torch.randn(2, 6, 4)
    return TrimToLongest(), [(x, torch.tensor([3, 5])), (x, torch.tensor([6, 6]))]


compiled = torch.compile(TrimToLongest())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).shape)
