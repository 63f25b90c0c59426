"""GM403 bad: the chunk length as `np.lcm` of two config numbers, as transformers' reformer computes it.

Dynamo traces `np.lcm` as a tensor op, so the `if` on the result branches on
"data" (GB0170). The fix is unsafe only because the config values are not
provably ints to the linter.
"""
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class ChunkPad(nn.Module):
    """Pads the last dimension up to a multiple of both attention chunk lengths."""

    def __init__(self, lsh_chunk: int = 4, local_chunk: int = 6) -> None:
        super().__init__()
        self.lsh_chunk = lsh_chunk
        self.local_chunk = local_chunk

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        chunk = np.lcm(self.lsh_chunk, self.local_chunk)
        if x.shape[-1] % chunk != 0:
            x = F.pad(x, (0, chunk - x.shape[-1] % chunk))
        return x * 2


def make():
    """Return (eager_callable, input_sets): a length that needs padding and one that does not."""
    torch.manual_seed(0)
    return ChunkPad(), [(torch.randn(2, 10),), (torch.randn(2, 12),)]


compiled = torch.compile(ChunkPad())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).shape)
