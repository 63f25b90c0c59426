"""Negative: `if x.dtype == torch.float16` tests metadata (guarded) -- no break."""
import torch


def upcast_softmax(x):
    if x.dtype == torch.float16:
        x = x.float()
    return torch.softmax(x * 2, dim=-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    x = torch.linspace(-1.0, 1.0, 32).reshape(4, 8)
    return upcast_softmax, [(x,), (x.half(),)]


compiled = torch.compile(upcast_softmax)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
