"""Negative: `if not x.is_contiguous()` is layout metadata (guarded) -- no break."""
import torch


def flatten_tokens(x):
    if not x.is_contiguous():
        x = x.contiguous()
    return x.view(-1) * 2


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    a = torch.arange(32.0).reshape(4, 8)
    return flatten_tokens, [(a,), (a.t(),)]


compiled = torch.compile(flatten_tokens)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
