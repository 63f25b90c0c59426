"""Negative: conditional expressions on shapes (`a if x.shape[-1] > 4 else b`) -- no break."""
import torch


@torch.compile(dynamic=False)
def pick_width(x):
    y = x[..., :4] if x.shape[-1] > 4 else x
    scale = 0.5 if y.size(0) > 2 else 2.0
    return y * scale


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return pick_width._torchdynamo_orig_callable, [(torch.ones(4, 8),), (torch.ones(2, 4),)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
