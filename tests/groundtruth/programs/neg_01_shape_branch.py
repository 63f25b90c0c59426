"""Negative: `if x.shape[0] > 2` tests a (specialised/guarded) shape, not a tensor value -- no break."""
import torch


@torch.compile
def trim_batch(x):
    y = x * 2
    if y.shape[0] > 2:
        y = y[:2]
    return y + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return trim_batch._torchdynamo_orig_callable, [(torch.ones(4, 8),), (torch.ones(2, 8),)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
