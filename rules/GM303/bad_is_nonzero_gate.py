"""GM303 bad: a residual gate tested with `torch.is_nonzero` (GB0033).

`is_nonzero` reads a one-element tensor's value into a Python bool: Dynamo breaks at the call
("Data dependent operator"), and under `capture_scalar_outputs` on a guard of the captured value.
Keeping the test a tensor (`gate != 0`) and selecting with `torch.where` stays in the graph.
"""
import torch
from torch import nn


class GatedResidual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.gate = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        if torch.is_nonzero(self.gate.sum()):
            h = h * self.gate
        return x + h


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return GatedResidual(), [(torch.randn(2, 4),)]


compiled = torch.compile(GatedResidual())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
