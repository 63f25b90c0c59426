"""Negative: branches on Python arguments with defaults (`scale is None`, `reduction == "mean"`) -- no break."""
import torch


def weighted_reduce(x, scale=None, reduction="sum"):
    if scale is not None:
        x = x * scale
    if reduction == "mean":
        return x.mean(-1)
    return x.sum(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    x = torch.ones(4, 8)
    return weighted_reduce, [(x,), (x, 2.0, "mean")]


compiled = torch.compile(weighted_reduce)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
