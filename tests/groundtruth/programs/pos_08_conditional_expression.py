"""GM103 positive: a conditional expression `a if x.mean() > 0 else b` whose test is a tensor value."""
import torch


def choose(x):
    a = x + 1
    b = x - 1
    z = a if x.mean() > 0 else b  # expect: GM103
    return z * 2


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return choose, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(choose)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
