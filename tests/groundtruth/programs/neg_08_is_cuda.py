"""Negative: `if x.is_cuda` is device metadata (guarded) -- no break."""
import torch
from torch import nn


class DeviceAwareScale(nn.Module):
    def forward(self, x):
        if x.is_cuda:
            return x.half().float() * 2
        return x * 2


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    Only the CPU branch can be exercised on a CPU-only machine.
    """
    return DeviceAwareScale(), [(torch.ones(4, 8),)]


compiled = torch.compile(DeviceAwareScale())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
