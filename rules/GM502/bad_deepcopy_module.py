"""GM502 bad: a frozen copy of a submodule made in forward (advice only)."""
import copy

import torch
from torch import nn


class Teacher(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.student = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        teacher = copy.deepcopy(self.student)
        return self.student(x) - teacher(x).detach()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Teacher(), [(torch.randn(3, 4),)]


compiled = torch.compile(Teacher())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
