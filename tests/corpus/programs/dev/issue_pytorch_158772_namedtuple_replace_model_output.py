"""`ModelOutput` typing.NamedTuple updated with `tup._replace(logits=...)` inside a compiled function.

Source: pytorch/pytorch#158772 (https://github.com/pytorch/pytorch/issues/158772)
Kept: the reporter's `ModelOutput(NamedTuple)` with `logits`/`loss` fields, `fn` rebinding
`tup = tup._replace(logits=tup.logits * 2)` then returning `tup.logits + tup.loss`, and the
`torch.compile(fn, fullgraph=True, dynamic=True)` entry.
Simplified: nothing beyond a second input set with a batch of logits.
"""
import torch
from typing import NamedTuple


class ModelOutput(NamedTuple):
    logits: torch.Tensor
    loss: torch.Tensor


def fn(tup: ModelOutput) -> torch.Tensor:
    tup = tup._replace(logits=tup.logits * 2)
    return tup.logits + tup.loss


compiled_fn = torch.compile(fn, fullgraph=True, dynamic=True)


def make():
    torch.manual_seed(0)
    tup = ModelOutput(logits=torch.tensor([1.0, 2.0]), loss=torch.tensor(0.5))
    tup2 = ModelOutput(logits=torch.randn(3, 5), loss=torch.randn(()))
    return fn, [(tup,), (tup2,)]
