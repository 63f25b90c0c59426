"""GM401 bad: a loss summed over a boolean selection, `err[err > margin].sum()`."""
import torch
from torch import nn


class HingeL1(nn.Module):
    """Sum of the absolute errors larger than a margin."""

    def __init__(self, margin: float = 0.5) -> None:
        super().__init__()
        self.margin = margin

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        err = (pred - target).abs()
        return torch.where(err > self.margin, err, 0).sum()


def make():
    """Return (eager_callable, input_sets): mixed errors, none above the margin (all-false mask), empty batch."""
    torch.manual_seed(0)
    pred = torch.randn(4, 6)
    return HingeL1(), [
        (pred, torch.randn(4, 6)),
        (pred, pred + 0.1),
        (torch.randn(0, 6), torch.randn(0, 6)),
    ]


compiled = torch.compile(HingeL1())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
