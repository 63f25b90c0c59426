"""GM501 bad: recurrent layers called in a list comprehension, and read from the module's own registry.

A bidirectional-by-hand encoder runs each `nn.GRU` of a `ModuleList` in a comprehension, and a
refiner reads its `nn.LSTM` back as `self._modules["rnn"]`: Dynamo refuses each RNN where it first
reads it (GB0014, with GB0092 and GB4347 at the comprehension; measured on torch 2.13), and runs that
function eagerly. The unsafe fix sets `torch._dynamo.config.allow_rnn = True`.
"""
import torch
from torch import nn


class MultiScaleEncoder(nn.Module):
    def __init__(self, dim: int = 4, scales: int = 2) -> None:
        super().__init__()
        self.rnns = nn.ModuleList([nn.GRU(dim, dim, batch_first=True) for _ in range(scales)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = [rnn(x)[0] for rnn in self.rnns]
        return torch.stack(outs).sum(0)


class Refiner(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.add_module("rnn", nn.LSTM(dim, dim, batch_first=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._modules["rnn"](x)[0]


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = MultiScaleEncoder()
        self.refiner = Refiner()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.refiner(self.encoder(x))


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Model(), [(torch.randn(2, 3, 4),)]


model = torch.compile(Model())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
