"""GM518 bad: a spiking neuron whose membrane state starts as an empty tensor subclass, created
in the compiled `forward` (the shape of snntorch's `_SpikeTensor(init_flag=False)`).

`Spike(init_flag=False)` reaches `super().__new__(cls, *args, **kwargs)` with no data: Dynamo
cannot bind that `Tensor.__new__` call ("failed to bind arguments when attempting to inline",
GB7312), logged in `__new__`.
"""
import torch
from torch import nn


class Spike(torch.Tensor):
    @staticmethod
    def __new__(cls, *args, init_flag=False, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, init_flag=True):
        self.init_flag = init_flag


class Leaky(nn.Module):
    def __init__(self, beta: float = 0.9) -> None:
        super().__init__()
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mem = Spike(init_flag=False)
        if hasattr(mem, "init_flag"):
            mem = torch.zeros_like(x)
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
