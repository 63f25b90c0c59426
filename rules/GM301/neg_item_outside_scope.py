"""GM301 negative: `.item()` only where torch.compile does not trace it, and shape arithmetic in scope.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


def report(loss: torch.Tensor) -> float:
    """Eager-only logging helper: never called from compiled code."""
    return loss.detach().item()


class Scaled(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if not torch.compiler.is_compiling():
            print("peak", h.abs().max().item())
        rows = int(x.shape[0])
        return h * float(rows) + len(x)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Scaled(), [(torch.randn(3, 4),), (torch.randn(1, 4),)]


compiled = torch.compile(Scaled())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(report(fn(*args).sum()))
