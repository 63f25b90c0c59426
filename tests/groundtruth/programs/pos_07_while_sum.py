"""GM102 positive: `while y.sum() < 100` re-tests a tensor value on every iteration."""
import torch


def grow(x):
    y = x.abs() + 0.5
    while y.sum() < 100:  # expect: GM102
        y = y * 2
    return y - 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    # small input: loop body runs; large input: loop body is skipped
    return grow, [(torch.ones(4, 8),), (torch.full((4, 8), 10.0),)]


compiled = torch.compile(grow)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
