"""GM521 negative: the adjacency is built sparse but handed to the compiled model dense.

`to_dense()` runs outside the compiled function, so the model only ever reads a dense tensor
and `adj @ support` stays in the graph (no break logged, torch 2.13).
"""
import torch
from torch import nn


class GraphConvolution(nn.Module):
    def __init__(self, in_features: int = 6, out_features: int = 3) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.1)

    def forward(self, input, adj):
        return adj @ torch.mm(input, self.weight)


def load_adjacency(n: int = 5):
    indices = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    return torch.sparse_coo_tensor(indices, torch.ones(4), (n, n)).to_dense()


adj = load_adjacency()
model = GraphConvolution()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return model, [(torch.randn(5, 6), adj)]


compiled = torch.compile(model)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
