"""Negative: `if torch.is_grad_enabled()` reads global autograd state (guarded) -- no break."""
import torch


def maybe_detach(x):
    y = x * 2
    if torch.is_grad_enabled():
        y = y + 0.0
    else:
        y = y.detach()
    return y * 3


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    Only the grad-enabled branch is exercised (grad mode is global state, not an input).
    """
    return maybe_detach, [(torch.ones(4, 8),)]


compiled = torch.compile(maybe_detach)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
