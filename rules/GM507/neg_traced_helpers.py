"""GM507 negative: a plain helper, `no_grad`, and `torch.func.grad` instead of `torch.autograd.grad`.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch


def loss_of(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return ((x * w).sum() - 1) ** 2


def step(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        x = x * 2
    g = torch.func.grad(loss_of)(w, x)
    return w - 0.1 * g


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return step, [(torch.randn(3), torch.randn(3))]


compiled = torch.compile(step)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
