"""GM302 bad: `.tolist()` on a float tensor inside compiled code (display-only: no source fix)."""
import torch
from torch import nn


class PeakScores(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor):
        probs = self.fc(x).softmax(-1)
        peaks = probs.amax(-1).tolist()
        return probs * 2, peaks


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return PeakScores(), [(torch.randn(3, 4),), (torch.randn(1, 4),)]


compiled = torch.compile(PeakScores())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
