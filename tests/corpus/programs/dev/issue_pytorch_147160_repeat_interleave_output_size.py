"""`torch.repeat_interleave(input, repeats, dim=0, output_size=3)` with tensor repeats and a given output size.

Source: https://github.com/pytorch/pytorch/issues/147160
Kept: `f` with its `@torch.compile()` decorator and the re-wrap `f = torch.compile(f)` as reported.
Simplified: CPU tensors instead of `device="cuda"`.
"""
import torch


@torch.compile()
def f(input, repeats):
    return torch.repeat_interleave(input, repeats, dim=0, output_size=3) + 1


f = torch.compile(f)


def make():
    input = torch.tensor([[1, 2], [3, 4]])
    repeat = torch.tensor([1, 2])
    return f._torchdynamo_orig_callable, [(input, repeat)]
