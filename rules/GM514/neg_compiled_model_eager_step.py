"""GM514 negative: the model is compiled and the training step around it stays eager; inside the
compiled loss, `model.zero_grad()`, reading the learning rate and a counter's `step()` are no
optimizer calls.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class Counter:
    def __init__(self) -> None:
        self.n = 0

    def step(self) -> None:
        self.n += 1


model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
counter = Counter()


def scaled_loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    model.zero_grad()
    lr = optimizer.param_groups[0]["lr"]
    loss = nn.functional.mse_loss(model(x), y) * (1.0 + lr)
    counter.step()
    return loss


compiled_loss = torch.compile(scaled_loss)


def train_step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    loss = compiled_loss(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)
    optimizer.step()
    return loss.detach()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return scaled_loss, [(torch.randn(3, 4), torch.randn(3, 2))]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
