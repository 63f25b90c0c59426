"""GM301 bad: a scalar copied to Python only to scale tensors (`peak = h.abs().max().item()`)."""
import torch
from torch import nn


class PeakNormalize(nn.Module):
    """Scales activations by their peak magnitude."""

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        peak = h.abs().max().item()
        return h / peak + h * 0.5


def make():
    """Return (eager_callable, input_sets): a batch, a single row and a large-valued batch."""
    torch.manual_seed(0)
    return PeakNormalize(), [(torch.randn(8, 4),), (torch.randn(1, 4),), (torch.randn(3, 4) * 1e3,)]


compiled = torch.compile(PeakNormalize())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
