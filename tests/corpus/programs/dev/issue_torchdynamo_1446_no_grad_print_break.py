"""`print` inside a `with torch.no_grad():` block: the graph break must carry the grad mode over.

Source: pytorch/torchdynamo#1446 (https://github.com/pytorch/torchdynamo/issues/1446)
The reporter's function runs four sins under no_grad with a print in the middle; after the break
the second graph was built with grad enabled.
Kept: the function body as posted and the printing custom compiler.
Simplified: `torchdynamo.optimize(my_compiler)` -> `torch.compile(fn, backend=my_compiler)`; the
compiler returns the GraphModule without printing it.
"""
import torch


def my_compiler(gm, args):
    return gm


def fn(x):
    with torch.no_grad():
        x = torch.sin(x)
        x = torch.sin(x)
        print("Break")
        x = torch.sin(x)
        x = torch.sin(x)

    return x


opt_fn = torch.compile(fn, backend=my_compiler)


def make():
    torch.manual_seed(0)
    return fn, [(torch.randn(4),), (torch.randn(4, requires_grad=True),)]
