"""Negative: `if torch.jit.is_scripting()` / `torch.jit.is_tracing()` are constant under Dynamo -- no break."""
import torch
from torch import nn


class Gelu(nn.Module):
    def forward(self, x):
        if torch.jit.is_scripting() or torch.jit.is_tracing():
            return x * torch.sigmoid(1.702 * x)
        return torch.nn.functional.gelu(x)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    Only the eager (not scripting/tracing) branch can be exercised here.
    """
    return Gelu(), [(torch.linspace(-2.0, 2.0, 32).reshape(4, 8),)]


compiled = torch.compile(Gelu())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
