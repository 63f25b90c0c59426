"""Boolean-mask copy `x[y] = z[y]` with `capture_dynamic_output_shape_ops = True` set in the file.

Source: https://github.com/pytorch/pytorch/issues/134241
Kept: the config line, `test(y, z)` verbatim, the compile call the reporter had commented out
(`torch.compile(test, mode='reduce-overhead', fullgraph=True)`) kept as the entry.
Simplified: CPU tensors instead of `.cuda()`, 4x4 instead of 10x10; backward dropped.
With the config flag set, torch 2.13 logs no graph break for the boolean-mask read (the report was about the
backward of the masked setitem).
"""
import torch
import torch._dynamo

torch._dynamo.config.capture_dynamic_output_shape_ops = True


def test(y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    x = torch.zeros_like(y, dtype=z.dtype)
    x[y] = z[y]
    x = x*2
    return x


test_comp = torch.compile(test, mode='reduce-overhead', fullgraph=True)


def make():
    torch.manual_seed(0)
    z = torch.randn(4, 4, requires_grad=True)
    y = (torch.randint(0, 2, (4, 4)) == 1)
    return test, [(y, z)]
