"""GM501 bad: a projection and a GRU kept in one `nn.ModuleList`, each called by its position.

`self.layers[0]` is the linear layer (no break); `self.layers[1]` is the GRU, which Dynamo refuses (GB0014).
"""
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim), nn.GRU(dim, dim, batch_first=True)])

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        h = self.layers[0](features).relu()
        out, _ = self.layers[1](h)
        return out + h


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Tagger(), [(torch.randn(2, 3, 4),)]


compiled = torch.compile(Tagger())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
