"""GM106 bad: a padding check whose message formats the batch size, as in many attention-mask validators."""
import torch
from torch import nn


class MaskedPool(nn.Module):
    """Mean over the unpadded positions; every row must keep at least one token."""

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch = hidden.shape[0]
        if torch.compiler.is_compiling():
            assert (mask.sum(-1) > 0).all(), "every one of the {batch} rows needs a token"
        else:
            assert (mask.sum(-1) > 0).all(), f"every one of the {batch} rows needs a token"
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(1) / weights.sum(1)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    hidden = torch.randn(2, 5, 4)
    return MaskedPool(), [(hidden, torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]))]


compiled = torch.compile(MaskedPool())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
