"""One function with an explicit `torch._dynamo.graph_break()`, compiled twice: default and fullgraph.

Source: https://github.com/pytorch/pytorch/issues/114059
The reporter's second repro: `fn` adds 2, calls `torch._dynamo.graph_break()`, adds 1;
`opt_fn = torch.compile(fn, backend="eager")` and
`nopython_fn = torch.compile(fn, backend="eager", fullgraph=True)`; the fullgraph call fails
and is caught, after which the cache was (wrongly) shared.
Kept: `fn` and both compile calls; the try/except driver as a function.
Simplified: nothing.
"""
import torch
import torch._dynamo


def fn(x):
    x = x + 2
    torch._dynamo.graph_break()
    return x + 1

opt_fn = torch.compile(fn, backend="eager")
nopython_fn = torch.compile(fn, backend="eager", fullgraph=True)


def main():
    try:
        nopython_fn(torch.zeros(1))
    except Exception:
        print("failed to run")

    print(opt_fn(torch.zeros(1)))
    print(nopython_fn(torch.zeros(1)))


def make():
    torch.manual_seed(0)
    return fn, [(torch.zeros(1),)]
