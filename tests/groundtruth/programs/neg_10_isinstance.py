"""Negative: `isinstance(x, torch.Tensor)` / `isinstance(x, (list, tuple))` are type tests -- no break."""
import torch


def as_batch(x):
    if isinstance(x, (list, tuple)):
        x = torch.stack(list(x))
    if isinstance(x, torch.Tensor):
        x = x * 2
    return x + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return as_batch, [(torch.ones(4, 8),), ([torch.ones(8), torch.zeros(8)],)]


compiled = torch.compile(as_batch)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
