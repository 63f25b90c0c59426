"""A compiled NumPy function that squares its array, prints, then doubles it.

Source: https://github.com/pytorch/pytorch/issues/109604
The reporter's `fn`, compiled with backend="eager" and called on `np.arange(8)`:
the `print("HI")` splits it, and the resumed half only does NumPy work.
Kept: `fn` as posted with its decorator (the commented-out comptime graph_break too).
Simplified: nothing.
"""
import numpy as np
import torch


@torch.compile(backend="eager")
def fn(x):
    x = x ** 2
    #torch._dynamo.comptime.graph_break()
    print("HI")
    return 2 * x


def make():
    torch.manual_seed(0)
    return fn._torchdynamo_orig_callable, [(np.arange(8),)]
