"""GM512 negative: the pointer is only passed on or compared with the same tensor's, and the alignment
test is skipped under compile.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


def maybe_align(x, alignment_in_bytes=16):
    if torch.compiler.is_compiling() or x.data_ptr() % alignment_in_bytes == 0:
        return x
    return x.clone()


class Cache(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor):
        h = maybe_align(self.proj(x))
        same_storage = h.data_ptr() == h.detach().data_ptr()
        return h * 2, same_storage


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Cache(), [(torch.randn(2, 4),)]


compiled = torch.compile(Cache())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
