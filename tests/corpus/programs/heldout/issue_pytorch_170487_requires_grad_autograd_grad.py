"""Input gradient inside a compiled function: `x = x.detach().requires_grad_(True)` then
`torch.autograd.grad(model(x).sum(), x)`.

Source: https://github.com/pytorch/pytorch/issues/170487
Kept: `model_grad` with `@torch.compile(fullgraph=True)` and `torch.enable_grad()` verbatim.
Simplified: the model is a Linear + tanh.
"""
import torch


@torch.compile(fullgraph=True)
def model_grad(model, x):
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        grad = torch.autograd.grad(model(x).sum(), x, create_graph=False)[0]
    return grad


def make():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Tanh())
    return model_grad._torchdynamo_orig_callable, [(model, torch.randn(2, 3))]
