"""`np.random.uniform(...)` inside a compiled function that builds a tensor from the NumPy array.

Source: https://github.com/pytorch/pytorch/issues/136559 (extracted by the reporter from
test/dynamo/test_unspec.py::test_to_tensor)
Kept: `f1` verbatim and `optimize = torch.compile(backend="inductor", fullgraph=True); optimize(f1)`.
Simplified: nothing; the function takes no arguments, as reported.
Torch 2.13 logs no graph break for this function (the report was an error under NumPy 2 in torch 2.4).
"""
import numpy as np
import torch


def f1():
    a = np.random.uniform(low=-1, high=1, size=(20, 1))
    return torch.tensor([a, a, a, a], dtype=torch.float64, device="cpu")


optimize = torch.compile(backend="inductor", fullgraph=True)
compiled_f1 = optimize(f1)


def make():
    return f1, [()]
