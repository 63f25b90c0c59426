"""GM101 bad: both branches of a tensor-valued `if` return the output of a different submodule (the big path only when needed)."""
import torch
from torch import nn


class EarlyExitHead(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.small = nn.Linear(dim, dim)
        self.big = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm(x)
        if x.abs().mean() > 1.0:  # expect: GM101
            return self.big(h) + x
        else:
            return self.small(h) + x


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return EarlyExitHead(), [(torch.full((4, 8), 2.0),), (torch.full((4, 8), 0.5),)]


compiled = torch.compile(EarlyExitHead())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
