"""GM103 bad: a `return a if cond else b` whose test compares two tensors' norms."""
import torch


@torch.compile
def pick_larger(a, b):
    return torch.where(a.norm() >= b.norm(), a * 1.0, b * 1.0)  # expect: GM103


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    big, small = torch.full((4, 8), 2.0), torch.ones(4, 8)
    return pick_larger._torchdynamo_orig_callable, [(big, small), (small, big)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
