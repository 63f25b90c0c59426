"""GM521 bad: a graph convolution network takes a sparse adjacency matrix (GB0015).

Source: tkipf/pygcn@1600b5b7:pygcn/layers.py:9-42, pygcn/models.py:6-19, pygcn/utils.py
(`sparse_mx_to_torch_sparse_tensor`): the adjacency is built once as a sparse tensor and passed
through every layer to `torch.spmm`. Dynamo cannot wrap a sparse tensor: each frame that reads it
breaks at the first read and runs eagerly from there (measured, torch 2.13).
"""
import torch
import torch.nn.functional as F
from torch import nn


class GraphConvolution(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.1)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        return torch.spmm(adj, support)


class GCN(nn.Module):
    def __init__(self, nfeat: int = 6, nhid: int = 8, nclass: int = 3) -> None:
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def load_data(n: int = 5):
    indices = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    adj = torch.sparse.FloatTensor(indices, torch.ones(4), torch.Size([n, n]))
    return adj, torch.randn(n, 6)


adj, features = load_data()
model = GCN()


def train_step(features):
    output = model(features, adj)
    return output.sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return train_step, [(features,)]


compiled = torch.compile(train_step)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
