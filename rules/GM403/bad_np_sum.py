"""GM403 bad: `np.sum` of a list of Python ints, then a Python branch on it (safe fix: builtin `sum`)."""
import numpy as np
import torch
from torch import nn


class Widen(nn.Module):
    def __init__(self, extra: int = 2) -> None:
        super().__init__()
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        width = np.sum([x.shape[-1], 2])
        if width > 6:
            return x * 2
        return x - 1


def make():
    """Return (eager_callable, input_sets) taking both branches."""
    torch.manual_seed(0)
    return Widen(), [(torch.randn(2, 8),), (torch.randn(2, 3),)]


compiled = torch.compile(Widen())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
