"""Negative: `if x.device.type == "cpu"` is device metadata -- no break."""
import torch
from torch import nn


class Matmul(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.w = nn.Parameter(torch.eye(dim))

    def forward(self, x):
        if x.device.type == "cpu":
            return x @ self.w
        return (x.half() @ self.w.half()).float()


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    Only the CPU branch can be exercised on a CPU-only machine.
    """
    return Matmul(), [(torch.ones(4, 8),)]


compiled = torch.compile(Matmul())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
