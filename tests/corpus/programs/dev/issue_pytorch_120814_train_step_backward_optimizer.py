"""A whole toy training step under torch.compile: `optimizer.zero_grad()`, forward, criterion, `loss.backward()`, `optimizer.step()`.

Source: https://github.com/pytorch/pytorch/issues/120814
("torch.compile() and optimizer sharp bits": optimizer and criterion must be
built outside the compiled function; zero_grad() and step() break the graph
on purpose; `loss.backward()` fails under fullgraph with `Unsupported:
Tensor.backward`).
Kept: the structure the report describes: a toy model, an SGD optimizer and a
CrossEntropyLoss created outside, and one compiled `train_step(x, y)` doing
zero_grad / forward / loss / backward / step and returning the loss.
Simplified: a 2-layer MLP on 8 features, 3 classes; the step function takes
its model, optimizer and criterion from module globals as in a script.
"""
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()


@torch.compile
def train_step(x, y):
    optimizer.zero_grad()
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
    return loss


def make():
    global model, optimizer, criterion
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    x = torch.randn(4, 8)
    y = torch.tensor([0, 2, 1, 2])
    return train_step._torchdynamo_orig_callable, [(x, y)]
