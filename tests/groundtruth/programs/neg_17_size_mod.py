"""Negative: `if x.size(-1) % 2` pads odd widths; it depends on the shape only -- no break."""
import torch
import torch.nn.functional as F


def pad_to_even(x):
    if x.size(-1) % 2:
        x = F.pad(x, (0, 1))
    return x.reshape(x.shape[0], -1, 2).sum(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return pad_to_even, [(torch.ones(4, 8),), (torch.ones(4, 7),)]


compiled = torch.compile(pad_to_even)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
