"""GM514 bad: a trainer whose compiled `train_step` method steps the optimizer its factory built
and the scheduler built on it, then clears the gradients.

`Adam.step` calls `torch._dynamo.graph_break()` (GB0025), and the scheduler wrapped it in
`lr_scheduler.py`, a file Dynamo skips (GB0007); the scheduler's own `step` lives there too
(GB0008), and `Optimizer.zero_grad` is `torch._disable_dynamo` (GB0008). `loss.backward()` is
GM507's (GB0123).
"""
import torch
from torch import nn


def build_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=lr)


class Trainer:
    def __init__(self, model: nn.Module, lr: float = 1e-3, warmup: int = 10) -> None:
        self.model = model
        self.optimizer = build_optimizer(model, lr)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: min(1.0, (s + 1) / warmup))

    def train_step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad()
        return loss.detach()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    trainer = Trainer(nn.Linear(4, 2))
    return trainer.train_step, [(torch.randn(3, 4), torch.randn(3, 2))]


trainer = Trainer(nn.Linear(4, 2))
compiled_step = torch.compile(trainer.train_step)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
