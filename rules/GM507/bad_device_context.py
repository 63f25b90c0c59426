"""GM507 bad: a `torch.device` block that builds the causal mask of a decode step on the input's device.

`torch.device(...)` used as a context manager is unsupported in torch 2.13: Dynamo breaks at the
`with` line (GB0142).
"""
import torch
import torch.nn.functional as F
from torch import nn


class DecodeStep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.scaled_dot_product_attention(x, x, x)
        with torch.device(x.device):
            causal = torch.ones(x.shape[-2], x.shape[-2]).tril()
        return self.proj(causal @ y)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return DecodeStep(), [(torch.randn(1, 2, 4, 8),)]


compiled = torch.compile(DecodeStep())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
