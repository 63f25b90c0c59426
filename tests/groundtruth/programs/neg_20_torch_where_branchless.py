"""Negative: the branchless form `torch.where(x.sum(-1, keepdim=True) > 0, x, -x)` has no Python branch -- no break."""
import torch


def sign_flip(x):
    y = x * 2
    return torch.where(y.sum(-1, keepdim=True) > 0, y - 1, y + 1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return sign_flip, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(sign_flip)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
