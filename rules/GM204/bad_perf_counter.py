"""GM204 bad: timing a block with `time.perf_counter()` inside the compiled function."""
import time

import torch


def timed(x, w):
    h = torch.relu(x)
    start = time.perf_counter()
    y = h @ w
    elapsed = time.perf_counter() - start
    return y.softmax(dim=-1), elapsed


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return timed, [(torch.randn(4, 8), torch.randn(8, 8))]


compiled = torch.compile(timed)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args)[0].sum())
