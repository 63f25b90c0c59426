"""`torch.tensor_split(x, w)` with a tensor of split offsets, under capture_scalar_outputs=True.

Source: pytorch/pytorch#125341 (https://github.com/pytorch/pytorch/issues/125341)
The reporter's first snippet: it fails under fullgraph=True even with scalar capture on; a small
rewrite through torch.split + diff + tolist (the sibling program) compiles.
Kept: the config toggle at import and `f` as posted.
Simplified: `fullgraph=True` dropped from the decorator so the run goes on past a break.
"""
import torch
import torch._dynamo

torch._dynamo.config.capture_scalar_outputs = True


@torch.compile
def f(x, w):
    return torch.tensor_split(x, w)


def make():
    torch.manual_seed(0)
    return f._torchdynamo_orig_callable, [(torch.randn(20), torch.tensor([0, 3, 8, 14]))]
