"""GM106 negative: tensor asserts with a constant message (or none), and an f-string message on a shape check.

Dynamo lowers the first two to device-side asserts; the third tests a shape,
which Dynamo specialises on. Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class MaskedPool(nn.Module):
    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        assert hidden.dim() == 3, f"expected (batch, seq, dim), got {hidden.dim()} dims"
        assert (mask.sum(-1) > 0).all(), "every row needs a token"
        assert torch.isfinite(hidden).all()
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(1) / weights.sum(1)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return MaskedPool(), [(torch.randn(2, 5, 4), torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]))]


compiled = torch.compile(MaskedPool())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
