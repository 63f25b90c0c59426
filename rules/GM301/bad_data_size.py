"""GM301: a size computed from tensor data (`lengths.max()`) is copied to a Python int (GB0033)."""
import torch
from torch import nn


class PadToLongest(nn.Module):
    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        longest = lengths.max()
        padded = x.new_zeros(x.shape[0], longest)
        return padded + 1


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return PadToLongest(), [(torch.randn(2, 3), torch.tensor([3, 5]))]


compiled = torch.compile(PadToLongest())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
