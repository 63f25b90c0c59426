"""GM401 bad: self-loops dropped from an edge list by a boolean mask over its columns (torchmd-net).

`edge_index[:, mask]` selects the columns where `mask` is true: the result's width depends on the
data, so Dynamo breaks there (GB0036). Nothing in the file types the parameter, but only an array
takes a multi-axis index with a slice, and a comparison of its items is a mask.
"""
import torch
from torch import nn


class DropSelfLoops(nn.Module):
    def forward(self, edge_index):
        mask = edge_index[0] != edge_index[1]
        edge_index = edge_index[:, mask]
        return edge_index


def make():
    """Return (eager_callable, input_sets)."""
    edges = torch.tensor([[0, 1, 1, 2], [0, 2, 1, 0]])
    return DropSelfLoops(), [(edges,)]


compiled = torch.compile(DropSelfLoops())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
