"""GM102 bad: `while y.sum() < 100` re-evaluates a tensor-valued test on every iteration."""
import torch


def grow_until(x):
    y = x.abs() + 0.5
    while y.sum() < 100:  # expect: GM102
        y = y * 2
    return y - 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    # small input: the body runs several times; large input: the body is skipped
    return grow_until, [(torch.ones(4, 8),), (torch.full((4, 8), 10.0),)]


compiled = torch.compile(grow_until)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
