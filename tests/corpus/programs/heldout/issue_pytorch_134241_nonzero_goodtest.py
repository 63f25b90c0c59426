"""The reporter's "goodtest" workaround: `nonzero()` indices instead of a boolean mask, compiled with
`fullgraph=True` and `capture_dynamic_output_shape_ops = True`.

Source: https://github.com/pytorch/pytorch/issues/134241
Kept: the config line and `goodtest(y, z)` verbatim with its `torch.compile(..., mode='default', fullgraph=True)`.
Simplified: CPU, 4x4 inputs, no backward.
"""
import torch
import torch._dynamo

torch._dynamo.config.capture_dynamic_output_shape_ops = True


def goodtest(y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    x = torch.zeros_like(y, dtype=z.dtype).reshape(-1)
    x[y.reshape(-1).nonzero().squeeze()] = z.reshape(-1)[y.reshape(-1).nonzero().squeeze()]
    x = x*2
    return x.reshape_as(y)


goodtest_comp = torch.compile(goodtest, mode='default', fullgraph=True)


def make():
    torch.manual_seed(0)
    z = torch.randn(4, 4, requires_grad=True)
    y = (torch.randint(0, 2, (4, 4)) == 1)
    return goodtest, [(y, z)]
