"""GM202 bad: `warnings.warn` for a slow path, between two tensor ops."""
import warnings

import torch


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if q.shape[-1] % 8:
        if not torch.compiler.is_compiling():
            warnings.warn(f"head dim {q.shape[-1]} is not a multiple of 8: slower kernels", stacklevel=2)
    return scores.softmax(dim=-1) @ v


def make():
    """Return (eager_callable, input_sets): head dims 6 (warns) and 8 (does not)."""
    torch.manual_seed(0)
    return attention, [tuple(torch.randn(2, 4, d) for _ in range(3)) for d in (6, 8)]


compiled = torch.compile(attention)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
