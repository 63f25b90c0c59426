"""GM503 negative: turning gradients off, reading `requires_grad`, and a local leaf that never leaves the graph.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch


def perturb(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    y.requires_grad_(False)
    scratch = torch.zeros(4)
    scratch.requires_grad_()
    penalty = (scratch * 3).sum().detach()
    return y + penalty + float(x.requires_grad)


def make():
    """Return (eager_callable, input_sets)."""
    return perturb, [(torch.randn(2, 4),)]


compiled = torch.compile(perturb)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
