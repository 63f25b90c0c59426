"""Negative: builtin `max(a, b)` / `min` on 0-d tensors compares values but Dynamo lowers it to torch ops -- no break."""
import torch


def soft_clip(x):
    y = x * 2
    hi = max(y.amax(), torch.tensor(1.0))
    lo = min(y.amin(), torch.tensor(-1.0))
    return (y - lo) / (hi - lo)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return soft_clip, [(torch.linspace(-2.0, 2.0, 32).reshape(4, 8),), (torch.zeros(4, 8),)]


compiled = torch.compile(soft_clip)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
