"""GM101 bad: an `if`/`elif`/`else` chain on tensor values; the `if` and the `elif` each break."""
import torch


def piecewise(x):
    m = x.mean()
    if m > 1.0:  # expect: GM101
        y = x.log()
    elif m < -1.0:  # expect: GM101
        y = -(-x).log()
    else:
        y = x * 0.5
    return y + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return piecewise, [(torch.full((4, 8), 3.0),), (torch.full((4, 8), -3.0),), (torch.zeros(4, 8),)]


compiled = torch.compile(piecewise)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
