"""GM515 bad: a block that scales its incoming gradient with a full backward pre-hook registered
in its `__init__`, called from the compiled model's `forward`.

Dynamo does not trace module-level backward hooks without compiled autograd: the call of the
block breaks (GB0083). The compiled model itself carries no hook.
"""
import torch
from torch import nn


class GradScaledBlock(nn.Module):
    def __init__(self, dim: int = 4, grad_scale: float = 0.5) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.grad_scale = grad_scale
        self.register_full_backward_pre_hook(self._scale_grad)

    def _scale_grad(self, module, grad_output):
        return tuple(g * self.grad_scale for g in grad_output)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).relu()


class Model(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.block = GradScaledBlock(dim)
        self.head = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        h = self.block(h)
        return self.head(h)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Model(), [(torch.randn(2, 4),)]


model = torch.compile(Model())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
