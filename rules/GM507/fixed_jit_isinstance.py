"""GM507 bad: an MVDR-style beamformer picks its reference channel with `torch.jit.isinstance`.

`torch.jit` is a module Dynamo skips: each `torch.jit.isinstance` call ends the graph (GB0007).
The safe fix writes the builtin `isinstance`, which checks a plain type the same way and which Dynamo folds.
"""
from typing import Union

import torch
from torch import Tensor


def beamform_weights(ws: Tensor, reference_channel: Union[int, Tensor]) -> Tensor:
    ws = ws / (ws.abs().sum(-1, keepdim=True) + 1e-8)
    if isinstance(reference_channel, int):
        return ws[..., :, reference_channel]
    elif isinstance(reference_channel, Tensor):
        return torch.einsum("...c,...c->...", [ws, reference_channel.to(ws.dtype)[..., None, None, :]])
    raise TypeError(f'Expected "int" or "Tensor" for reference_channel. Found: {type(reference_channel)}.')


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    ws = torch.randn(5, 3, 3)
    return beamform_weights, [(ws, 1), (ws, torch.tensor([0.0, 1.0, 0.0]))]


compiled = torch.compile(beamform_weights)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
