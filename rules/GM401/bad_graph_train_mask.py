"""GM401 bad: a node-classification step selects the training nodes with the batch's mask attribute.

PyTorch Geometric's `F.nll_loss(out[data.train_mask], data.y[data.train_mask])`: the graph object carries
a boolean `train_mask`, so each read keeps a data-dependent number of rows and Dynamo breaks there
(GB0036). Nothing in the file types `data`; its attribute's name says it selects.
"""
import types

import torch
import torch.nn.functional as F
from torch import nn


class GCN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x, edge_index):
        return self.lin(x).log_softmax(dim=-1)


def train_step(model, data):
    out = model(data.x, data.edge_index)
    return F.nll_loss(out[data.train_mask], data.y[data.train_mask])


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    data = types.SimpleNamespace(
        x=torch.randn(5, 4),
        edge_index=torch.tensor([[0, 1], [1, 2]]),
        y=torch.tensor([0, 1, 2, 1, 0]),
        train_mask=torch.tensor([True, False, True, True, False]),
    )
    return train_step, [(GCN(), data)]


compiled = torch.compile(train_step)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
