"""GM204 bad: Python's `random.random()` for jitter (torch's RNG is traced; this is not)."""
import random

import torch


def jitter(x):
    h = torch.tanh(x)
    scale = 1.0 + 0.01 * random.random()
    return h * scale


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    random.seed(0)
    return jitter, [(torch.randn(4),)]


compiled = torch.compile(jitter)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
