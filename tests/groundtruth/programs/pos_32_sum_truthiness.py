"""GM101 positive: truthiness of a 0-d tensor (`if mask.sum():`) is a tensor-value test."""
import torch


@torch.compile
def drop_masked(x, mask):
    y = x * 2
    if mask.sum():  # expect: GM101
        y = y * (1 - mask.unsqueeze(-1).to(y.dtype))
    return y + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    x = torch.ones(4, 8)
    return drop_masked._torchdynamo_orig_callable, [
        (x, torch.tensor([0, 1, 0, 1])),
        (x, torch.zeros(4, dtype=torch.long)),
    ]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
