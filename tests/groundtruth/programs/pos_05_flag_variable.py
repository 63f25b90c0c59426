"""GM101 positive: the condition is a name bound to a tensor comparison (`flag = y.max() > 3`), so `if flag:` breaks."""
import torch


@torch.compile(dynamic=False)
def saturate(x):
    y = x * 2
    flag = y.max() > 3
    if flag:  # expect: GM101
        y = y / y.max()
    return y + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return saturate._torchdynamo_orig_callable, [(torch.full((4, 8), 5.0),), (torch.zeros(4, 8),)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
