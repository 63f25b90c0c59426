"""GM101 positive: comparing two tensors' norms (`if a.norm() > b.norm()`) is data-dependent."""
import torch


def larger_first(a, b):
    a2 = a * 2
    b2 = b * 2
    if a2.norm() > b2.norm():  # expect: GM101
        return torch.cat([a2, b2], dim=-1)
    return torch.cat([b2, a2], dim=-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    big = torch.full((4, 8), 3.0)
    small = torch.full((4, 8), 0.5)
    return larger_first, [(big, small), (small, big)]


compiled = torch.compile(larger_first)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
