"""Module forward under `torch.amp.autocast` calling a helper that graph-breaks.

Source: pytorch/pytorch#95837 (https://github.com/pytorch/pytorch/issues/95837)
Kept: the reporter's `fn(x)` (an explicit `torch._dynamo.graph_break()` then
`x.sum() / x.numel()`), `MyModule.forward(a, b)` adding the inputs inside a
`with torch.amp.autocast(device_type=...)` block and calling `fn`, and
`torch._dynamo.optimize("eager")(module)` (today: `torch.compile(module, backend="eager")`).
Simplified: CUDA float16 -> CPU: `device_type="cpu"` with bfloat16 inputs,
8x8 kept.
"""
import torch
import torch._dynamo


def fn(x):
    torch._dynamo.graph_break()
    return x.sum() / x.numel()


class MyModule(torch.nn.Module):
    def forward(self, a, b):
        with torch.amp.autocast(device_type="cpu"):
            x = a + b
            y1 = fn(x)
        return y1


module = MyModule()
opt_m = torch.compile(module, backend="eager")


def make():
    torch.manual_seed(0)
    a = torch.rand((8, 8), dtype=torch.bfloat16)
    b = torch.rand((8, 8), dtype=torch.bfloat16)
    return MyModule(), [(a, b)]
