"""GM101 positive: compiled via `from torch import compile as tc`; `if x.amax() > 1` branches on data."""
import torch
from torch import compile as tc


def unit_range(x):
    y = x + 0.0
    if y.amax() > 1:  # expect: GM101
        y = y / y.amax()
    return y * 2


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return unit_range, [(torch.full((4, 8), 3.0),), (torch.full((4, 8), 0.5),)]


compiled = tc(unit_range)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
