"""Negative: `if not torch.compiler.is_compiling(): print(...)` is constant-folded under Dynamo -- no break."""
import torch
from torch import nn


class DebugBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        if not torch.compiler.is_compiling():
            print("eager mode: activation mean", float(h.detach().mean()))
        return h + x


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    The print branch runs in eager mode; under compile it is folded away.
    """
    torch.manual_seed(0)
    return DebugBlock(), [(torch.randn(4, 8),)]


compiled = torch.compile(DebugBlock())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
