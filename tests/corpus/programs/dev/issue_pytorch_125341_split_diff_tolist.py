"""The rewrite of tensor_split: `torch.split(x, torch.diff(w, prepend=..., append=...).tolist())`.

Source: pytorch/pytorch#125341 (https://github.com/pytorch/pytorch/issues/125341)
The reporter's second snippet, which compiles with fullgraph=True when capture_scalar_outputs is on.
Kept: the config toggle at import, `f` as posted, the fullgraph decorator.
Simplified: nothing.
"""
import torch
import torch._dynamo

torch._dynamo.config.capture_scalar_outputs = True


@torch.compile(fullgraph=True)
def f(x, w):
    return torch.split(x, torch.diff(w, prepend=torch.tensor([0]), append=torch.tensor([x.size(0)])).tolist())


def make():
    torch.manual_seed(0)
    return f._torchdynamo_orig_callable, [(torch.randn(20), torch.tensor([0, 3, 8, 14]))]
