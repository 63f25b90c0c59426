"""GM401 negative: masked writes, integer gathers and three-argument `torch.where` have static shapes.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class Clamp(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        h[h < -1] = -1
        order = h.argsort(-1)
        picked = torch.gather(h, -1, order)
        first = h[:, 0]
        return torch.where(h > 0, picked, 0) + first[:, None] + torch.repeat_interleave(h, 2, dim=0)[::2]


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Clamp(), [(torch.randn(3, 4),)]


compiled = torch.compile(Clamp())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
