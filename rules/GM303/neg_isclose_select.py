"""GM303 negative: the comparison kept as a 0-d tensor and used in `torch.where`; elementwise `eq`.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class SymmetricMix(nn.Module):
    def forward(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        symmetric = torch.isclose(w, w.t(), atol=1e-6).all()
        same = w.eq(w.t())
        return torch.where(symmetric, x @ w, x @ (0.5 * (w + w.t()))) + same.sum()


def make():
    """Return (eager_callable, input_sets)."""
    x = torch.ones(4, 8)
    return SymmetricMix(), [(torch.eye(8), x), (torch.triu(torch.ones(8, 8)), x)]


compiled = torch.compile(SymmetricMix())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
