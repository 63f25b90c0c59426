"""GM204 bad: Mixup's `1 - lam` on a `random.uniform` draw (timm's RandomErasing sizes its patch the same way).

Dynamo traces the draw itself and holds it in a graph tensor; a Python
operator between that number and a plain number has no tracing rule (GB0213).
`x * lam` with a tensor `x` is traced. (Dynamo then runs the rest of the
frame eagerly, so a second such operation in the same function is not logged
until the first is gone.)
"""
import random

import torch


def mixup(x, y):
    h = torch.tanh(x)
    lam = random.uniform(0.0, 1.0)
    return h * lam + y * (1 - lam)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    random.seed(0)
    return mixup, [(torch.randn(4), torch.randn(4))]


compiled = torch.compile(mixup)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
