"""GM204 bad: a timestamp taken inside the compiled function."""
from datetime import datetime

import torch


def stamped(x):
    y = x.exp()
    when = datetime.now()
    return y.log1p(), when.year


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return stamped, [(torch.randn(4),)]


compiled = torch.compile(stamped)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args)[0].sum())
