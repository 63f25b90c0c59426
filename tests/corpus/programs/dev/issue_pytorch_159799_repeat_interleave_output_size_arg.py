"""`ri(inp, repeats, output_size)`: repeat_interleave with tensor repeats and `output_size` passed in.

Source: https://github.com/pytorch/pytorch/pull/159799 (the minimized repro in the revert description)
Kept: `ri` verbatim and `ri_c = torch.compile(ri)`.
Simplified: CPU tensors instead of CUDA.
"""
import torch


def ri(inp, repeats, output_size):
    return torch.repeat_interleave(inp, repeats, output_size=output_size)


ri_c = torch.compile(ri)


def make():
    inp = torch.arange(0, 4).reshape(-1, 1)
    x = torch.tensor([1, 2, 3, 4])
    return ri, [(inp, x, 10)]
