"""Negative: masked *assignment* `y[y < 0] = 0` is not a branch and keeps a static shape -- no break."""
import torch


def relu_inplace_copy(x):
    y = x * 2
    y[y < 0] = 0
    return y + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return relu_inplace_copy, [(torch.linspace(-1.0, 1.0, 32).reshape(4, 8),)]


compiled = torch.compile(relu_inplace_copy)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
