"""GM515 negative: the same gradient scaling with a tensor hook on the block's output, a forward
hook on the head, and a backward hook on the compiled module itself (its own call runs eagerly).

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class GradScaledBlock(nn.Module):
    def __init__(self, dim: int = 4, grad_scale: float = 0.5) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.grad_scale = grad_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x).relu()
        if y.requires_grad:
            y.register_hook(lambda g: g * self.grad_scale)
        return y


class Model(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.block = GradScaledBlock(dim)
        self.head = nn.Linear(dim, 1)
        self.head.register_forward_hook(lambda module, inputs, output: None)
        self.register_full_backward_hook(lambda module, grad_input, grad_output: None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(x))


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Model(), [(torch.randn(2, 4),)]


model = torch.compile(Model())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
