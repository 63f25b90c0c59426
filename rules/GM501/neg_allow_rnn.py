"""GM501 negative: the file turns `allow_rnn` on, and a `GRUCell` (always traced) runs too.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn

torch._dynamo.config.allow_rnn = True


class Encoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.cell = nn.GRUCell(dim, dim)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(features)
        return self.cell(out[:, -1])


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(2, 3, 4),)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
