"""GM518 negative: a state subclass built from a tensor, `Spike(torch.zeros_like(x))`, whose
`__new__` passes the data on to `super().__new__(cls, data)`: traced, no break (measured; a
subclass that also defines `__init__` or gets keyword arguments can still break at the call,
GB7312, which GM518 does not claim)."""
import torch
from torch import nn


class Spike(torch.Tensor):
    def __new__(cls, data, init_flag=False):
        return super().__new__(cls, data)


class Leaky(nn.Module):
    def __init__(self, beta: float = 0.9) -> None:
        super().__init__()
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mem = Spike(torch.zeros_like(x))
        return self.beta * mem + x


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Leaky(), [(torch.randn(2, 4),)]


neuron = torch.compile(Leaky())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
