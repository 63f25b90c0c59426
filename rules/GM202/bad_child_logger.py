"""GM202 bad: a child logger (`getLogger(__name__).getChild(...)`) logs in `forward` (GB0291)."""
import logging

import torch
from torch import nn

_LOG = logging.getLogger(__name__).getChild("attention")


class Attention(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        _LOG.debug("attention over %d tokens", x.shape[0])
        weights = torch.softmax(q @ k.T, dim=-1)
        return weights @ v


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Attention(), [(torch.randn(3, 4),)]


compiled = torch.compile(Attention())

if __name__ == "__main__":
    logging.basicConfig(level=logging.DEBUG)
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
