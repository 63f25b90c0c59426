"""`scale = x.sum().item()` compiled with a counting backend and `fullgraph=True` while
`capture_scalar_outputs = False`.

Source: https://github.com/pytorch/pytorch/issues/196198
Kept: `counting_backend`, `fn` verbatim, the config toggle and `torch.compile(fn, backend=counting_backend,
fullgraph=True)`.
Simplified: prints in the backend dropped (the backend only counts); the try/finally restore is kept.
"""
import torch

compile_count = 0


def counting_backend(gm, example_inputs):
    global compile_count
    compile_count += 1
    return gm.forward


def fn(x):
    scale = x.sum().item()
    return x * scale + 1


def run():
    global compile_count
    old_capture_scalars = torch._dynamo.config.capture_scalar_outputs
    try:
        torch._dynamo.config.capture_scalar_outputs = False
        x = torch.tensor([1.0, 2.0, 4.0], requires_grad=True)
        torch._dynamo.reset()
        compile_count = 0
        compiled = torch.compile(fn, backend=counting_backend, fullgraph=True)
        return compiled(x)
    finally:
        torch._dynamo.config.capture_scalar_outputs = old_capture_scalars


def make():
    return fn, [(torch.tensor([1.0, 2.0, 4.0], requires_grad=True),)]
