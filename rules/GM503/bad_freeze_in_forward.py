"""GM503 bad: freezing a submodule's parameters inside forward (a loop, so Dynamo gives up on the function)."""
import torch
from torch import nn


class Adapter(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.backbone = nn.Linear(dim, dim)
        self.adapter = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for parameter in self.backbone.parameters():
            parameter.requires_grad = False
        return self.adapter(self.backbone(x))


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Adapter(), [(torch.randn(3, 4),)]


compiled = torch.compile(Adapter())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
