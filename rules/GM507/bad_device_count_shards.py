"""GM507 bad: a layer that splits its batch into one shard per visible GPU, asking
`torch.cuda.device_count()` inside the compiled forward.

The query returns a Python int from a torch function, which a graph cannot hold: Dynamo
breaks at the call ("torch.* op returned non-Tensor", GB0208).
"""
import torch
from torch import nn


class Sharded(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shards = max(torch.cuda.device_count(), 1)
        return torch.cat([self.proj(part) for part in x.chunk(shards)])


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Sharded(), [(torch.randn(4, 4),)]


sharded = torch.compile(Sharded())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
