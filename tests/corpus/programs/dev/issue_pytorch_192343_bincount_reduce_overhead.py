"""`torch.bincount` in a function compiled with `mode="reduce-overhead"`: the output length depends on the data.

Source: https://github.com/pytorch/pytorch/issues/192343
Kept: the reporter's `test(X, minlength=1024)` verbatim (note `minlength` is accepted but
not passed to bincount) and `torch.compile(test, mode="reduce-overhead")`.
Simplified: CPU tensors instead of `device="cuda"`; the profiler around the calls is dropped.
"""
import torch


def test(X, minlength=1024):
    X = X + 1
    r = torch.bincount(X).float()
    return r - 1


compiledtest = torch.compile(test, mode="reduce-overhead")


def make():
    torch.manual_seed(0)
    a = torch.randint(0, 32, (1,))
    b = torch.randint(0, 32, (1,))
    return test, [(a,), (b, 64)]
