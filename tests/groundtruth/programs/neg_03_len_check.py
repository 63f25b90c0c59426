"""Negative: `if len(x) > 3` is the size of dim 0, known at trace time -- no break."""
import torch


def head_or_all(x):
    y = x + 1
    if len(y) > 3:
        y = y[:3]
    return y * 2


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return head_or_all, [(torch.ones(4, 8),), (torch.ones(2, 8),)]


compiled = torch.compile(head_or_all)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
