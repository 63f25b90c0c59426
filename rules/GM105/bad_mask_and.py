"""GM105 bad: combining two boolean tensors with `and` (a value, not a condition) forces a host sync."""
import torch


def both_positive(x):
    y = x * 2
    ok = (y.sum() > 0) and (y.mean() < 10)
    return y * ok


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return both_positive, [(torch.ones(4, 8),), (-torch.ones(4, 8),), (torch.full((4, 8), 20.0),)]


compiled = torch.compile(both_positive)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
