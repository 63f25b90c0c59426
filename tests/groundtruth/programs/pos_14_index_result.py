"""GM101 positive: branching on an indexed element (`if x[0, 0] > 0`) is a tensor-value test."""
import torch


@torch.compile
def first_token_sign(x):
    y = x * 2
    if y[0, 0] > 0:  # expect: GM101
        y = y.flip(0)
    return y - 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    a = torch.arange(32.0).reshape(4, 8) + 1
    return first_token_sign._torchdynamo_orig_callable, [(a,), (-a,)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
