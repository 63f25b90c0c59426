"""GM101 positive: `if (x >= 0).all()` picks a code path from the tensor's values."""
import torch


def safe_sqrt(x):
    y = x * 1.0
    if (y >= 0).all():  # expect: GM101
        return y.sqrt()
    return y.abs().sqrt() * y.sign()


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    a = torch.arange(32.0).reshape(4, 8)
    return safe_sqrt, [(a,), (a - 16,)]


compiled = torch.compile(safe_sqrt)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
