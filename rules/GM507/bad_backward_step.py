"""GM507 bad: a compiled training step calls `loss.backward()`, and an auxiliary loss goes through
`torch.autograd.backward`.

`Tensor.backward()` is not traced while `trace_autograd_ops` is off (GB0123); `torch.autograd.backward`
lives in a file Dynamo skips (GB0007).
"""
import torch
from torch import nn


class Regressor(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.body = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x).relu())


model = Regressor()


def train_step(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    loss = nn.functional.mse_loss(model(x), target)
    loss.backward()
    aux = model.body.weight.pow(2).sum() * 1e-3
    torch.autograd.backward(aux)
    return loss.detach()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return train_step, [(torch.randn(3, 4), torch.randn(3, 1))]


compiled = torch.compile(train_step)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
