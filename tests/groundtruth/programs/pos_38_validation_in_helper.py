"""GM104 positive: a same-file `_check_probs` helper with a raise-only tensor guard, called from forward."""
import torch
from torch import nn


def _check_probs(p):
    if (p < 0).any():  # expect: GM104
        raise ValueError("probabilities must be non-negative")


class Mixture(nn.Module):
    def __init__(self, dim=8, k=4):
        super().__init__()
        self.logits = nn.Linear(dim, k)

    def forward(self, x):
        p = self.logits(x).softmax(-1)
        _check_probs(p)
        return p.cumsum(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    The raising branch is not exercised: calling it would raise ValueError.
    """
    torch.manual_seed(0)
    return Mixture(), [(torch.randn(4, 8),)]


compiled = torch.compile(Mixture())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
