"""GM507 bad: gpt-fast's `sdp_kernel` block around the attention of a decode step.

`torch.backends.cuda.sdp_kernel(...)` is an unsupported context manager in torch 2.13: Dynamo breaks
at the `with` line (GB0142, and GB0208 on the same line) and runs the resumed frame eagerly.
"""
import torch
import torch.nn.functional as F
from torch import nn


class DecodeStep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False, enable_math=True):
            y = F.scaled_dot_product_attention(x, x, x)
        return self.proj(y)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return DecodeStep(), [(torch.randn(1, 2, 4, 8),)]


compiled = torch.compile(DecodeStep())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
