"""GM514 bad: a training iteration compiled whole, with the optimizer passed in (PANNs' `train`).

Nothing in the file says what `optimizer` is, but the function calls both `step()` and
`zero_grad()` on it: only an optimizer offers both. With a built-in one, `step` calls
`torch._dynamo.graph_break()` around the update (GB0025) and `zero_grad` is marked
`torch._disable_dynamo` (GB0008); `loss.backward()` between them breaks too (GM507).
"""
import torch
from torch import nn


def train_iteration(model, optimizer, batch, target):
    loss = nn.functional.mse_loss(model(batch), target)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.detach()


step = torch.compile(train_iteration)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    return train_iteration, [(model, optimizer, torch.randn(4, 3), torch.randn(4, 1))]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
