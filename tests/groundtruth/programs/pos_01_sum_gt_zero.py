"""GM101 positive: `if y.sum() > 0` branches on a tensor value, so Dynamo must break at the `if`."""
import torch


@torch.compile
def shift(x):
    y = x * 2
    if y.sum() > 0:  # expect: GM101
        y = y - 1
    else:
        y = y + 1
    return y * 3


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    # The decorator returns a wrapper; the original eager function is kept on it.
    return shift._torchdynamo_orig_callable, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
