"""GM404 bad: infinite entries cleared one by one over the rows of `torch.nonzero` (vissl's Sinkhorn-Knopp).

Each row of `torch.nonzero(mask)` is a 1-d tensor of positions, so `i[0]` and `i[1]` are 0-d
tensors: as positions of a multi-axis index, in an assignment too, they go through `__index__`
and Dynamo converts them to Python ints (GB0033, after the `nonzero` itself breaks, GB0036).
"""
import torch
from torch import nn


class ClearInf(nn.Module):
    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        q = scores.clone()
        ind = torch.nonzero(torch.isinf(q))
        for i in ind:
            q[i[0], i[1]] = 0
        return q.softmax(-1)


def make():
    """Return (eager_callable, input_sets)."""
    scores = torch.tensor([[1.0, float("inf"), 0.5], [0.2, 0.1, float("inf")]])
    return ClearInf(), [(scores,)]


compiled = torch.compile(ClearInf())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
