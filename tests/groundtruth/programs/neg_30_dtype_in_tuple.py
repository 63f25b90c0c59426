"""Negative: `x.dtype in (torch.float16, torch.bfloat16)` and `x.is_floating_point()` are dtype metadata -- no break."""
import torch


def to_compute_dtype(x):
    if not x.is_floating_point():
        x = x.float()
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    return x.softmax(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    x = torch.arange(32).reshape(4, 8)
    return to_compute_dtype, [(x,), (x.to(torch.bfloat16),), (x.float(),)]


compiled = torch.compile(to_compute_dtype)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
