"""GM523: a spiking neuron detaches its membrane state in place at every step (GB0148).

snnTorch's hidden-state reset walks the neurons and runs `mem.detach_()` on each one's state.
"""
import torch
from torch import nn


class Leaky(nn.Module):
    def __init__(self, beta: float = 0.9) -> None:
        super().__init__()
        self.beta = beta
        self.mem = torch.zeros(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.mem.detach_()
        self.mem = self.beta * self.mem + x
        return (self.mem > 1.0).float()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Leaky(), [(torch.rand(2, 4) * 2,)]


compiled = torch.compile(Leaky())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
