"""With `capture_scalar_outputs = True`, `x + y.item()` is traced (the issue is a later inductor error).

Source: https://github.com/pytorch/pytorch/issues/158083
Kept: the config line and `f` with `@torch.compile(backend="aot_eager")` verbatim.
Simplified: nothing; the reported failure is in `tensorify_python_scalars`, after Dynamo.
"""
import torch

torch._dynamo.config.capture_scalar_outputs = True


@torch.compile(backend="aot_eager")
def f(x):
    y = x.sum()
    return x + y.item()


def make():
    return f._torchdynamo_orig_callable, [(torch.ones(3, 3),)]
