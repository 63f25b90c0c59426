"""`VonMises.sample()` called in a compiled function, distribution built outside it.

Source: pytorch/pytorch#194764 (https://github.com/pytorch/pytorch/issues/194764)
Kept: the setup the report describes: a `torch.distributions.VonMises` constructed
outside the compiled region, a compiled function that only calls its
`.sample()` (the rejection-sampling loop with `while not done.all()`), compiled
with `torch.compile(..., fullgraph=True)`.
Simplified: the stored thread shows the description, not the script itself; the
function is written from that description with loc 0.0 and concentration 1.0.
"""
import torch
from torch.distributions import VonMises

dist = VonMises(torch.tensor([0.0]), torch.tensor([1.0]))


def fn():
    return dist.sample()


compiled = torch.compile(fn, backend="eager", fullgraph=True)


def make():
    torch.manual_seed(0)
    return fn, [()]
