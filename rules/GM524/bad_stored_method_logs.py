"""GM524: a step keeps a bound method of a helper object on the model, then calls it, and it prints (GB0092).

The replay of the store is logged at the call: the print inside the method breaks the graph first.
"""
import torch
from torch import nn


class Tracker:
    def __init__(self, name: str) -> None:
        self.name = name

    def report(self, x: torch.Tensor) -> torch.Tensor:
        print("tracking", self.name)
        return x * 2


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.on_step = Tracker("lin").report
        y = self.on_step(self.lin(x))
        return y + 1


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Model(), [(torch.randn(2, 4),)]


compiled = torch.compile(Model())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
