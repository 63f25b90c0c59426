"""`if hasattr(x, "to"): return x.to("cpu")` on a compiled function that may receive a dict (accelerate's send_to_device shape).

Source: pytorch/pytorch#134577 (https://github.com/pytorch/pytorch/issues/134577)
Kept: the minified repro verbatim: `@torch.compile(fullgraph=True)` on `func`, `hasattr(x, "to")`
guarding `x.to("cpu")`, called with `dict(a=torch.randn(3))`.
Simplified: the repro's unused `from tensordict import TensorDict` is dropped; a second input (a plain
tensor) takes the `hasattr` True side.
"""
import torch


@torch.compile(fullgraph=True)
def func(x):
    if hasattr(x, "to"):
        return x.to("cpu")
    return x


def make():
    torch.manual_seed(0)
    return func._torchdynamo_orig_callable, [(dict(a=torch.randn(3)),), (torch.randn(3),)]
