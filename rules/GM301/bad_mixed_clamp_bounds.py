"""GM301: a clamp whose bounds mix a Python number and a tensor reads the tensor back (GB0033).

Beta-VAE's capacity objective clamps a growing target between `0` and `C_max`, a tensor attribute:
`torch.clamp` then takes the overload for two Python bounds, and Dynamo must turn the tensor into a
number ("Data dependent operator"). Two tensor bounds, or a tensor bound alone, stay in the graph.
"""
import torch
from torch import nn


class CapacityLoss(nn.Module):
    def __init__(self, c_max: float, stop_iter: int) -> None:
        super().__init__()
        self.register_buffer("c_max", torch.tensor([c_max]))
        self.stop_iter = stop_iter

    def forward(self, kld: torch.Tensor, step: int) -> torch.Tensor:
        capacity = torch.clamp(self.c_max / self.stop_iter * step, 0, self.c_max[0])
        within = kld.clamp(min=kld.min(), max=kld.max())
        return (within.sum() - capacity).abs()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return CapacityLoss(20.0, 100), [(torch.rand(4, 3), 7)]


compiled = torch.compile(CapacityLoss(20.0, 100))

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
