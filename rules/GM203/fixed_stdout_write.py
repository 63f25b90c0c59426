"""GM203 bad: progress written to `sys.stdout` between tensor ops."""
import sys

import torch


def smooth(x):
    y = torch.cumsum(x, dim=-1)
    if not torch.compiler.is_compiling():
        sys.stdout.write(f"smoothing {tuple(y.shape)}\n")
        sys.stdout.flush()
    return y / torch.arange(1, x.shape[-1] + 1)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return smooth, [(torch.randn(2, 5),)]


compiled = torch.compile(smooth)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
