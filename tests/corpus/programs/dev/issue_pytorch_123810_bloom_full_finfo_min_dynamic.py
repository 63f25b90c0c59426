"""BLOOM-style causal mask fill: torch.full((L, L), finfo(float16).min) from the input's
sequence length, compiled with dynamic=True (the report is about recompiles, not breaks).

Source: pytorch/pytorch#123810 (https://github.com/pytorch/pytorch/issues/123810)
Kept: the reporter's snippet extracted from a BLOOM deployment: `_, L = x.shape`,
`torch.full((L, L), torch.finfo(torch.float16).min, device=device)`,
`torch.compile(fn, dynamic=True)` and the three calls with growing sequence length.
Simplified: device is "cpu" instead of "cuda".
"""
import functools

import torch

device = 'cpu'


def fn(x):
    _, L = x.shape
    return torch.full((L, L), torch.finfo(torch.float16).min, device=device)


cfn = torch.compile(fn, dynamic=True)

input_fn = functools.partial(torch.randint, 10, 1000, device=device)


def make():
    torch.manual_seed(0)
    return fn, [(input_fn((2, 3)),), (input_fn((2, 4)),), (input_fn((2, 5)),)]
