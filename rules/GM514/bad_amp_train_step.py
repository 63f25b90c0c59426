"""GM514 bad: a whole mixed-precision training step compiled, in the shape of torchvision's
`train_one_epoch` (references/classification/train.py): `zero_grad`, forward and loss, then the
`GradScaler` sequence `scale(loss).backward()`, `unscale_`, gradient clipping, `step`, `update`.

`Optimizer.zero_grad` is `torch._disable_dynamo` (GB0008); every `GradScaler` method lives in
`torch.amp`, which Dynamo skips (GB0008; `backward` adds GB0123 on its line, and `scaler.step`
the optimizer's `graph_break()`, GB0025). Clipping traces.
"""
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scaler = torch.amp.GradScaler("cpu")


def train_step(image: torch.Tensor, target: torch.Tensor, clip_grad_norm: float = 1.0) -> torch.Tensor:
    output = model(image)
    loss = criterion(output, target)
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return train_step, [(torch.randn(4, 8), torch.tensor([0, 2, 1, 2]))]


compiled = torch.compile(train_step)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
