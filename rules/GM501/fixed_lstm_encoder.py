"""GM501 bad: a speech-style encoder running an `nn.LSTM` over projected features.

The unsafe fix sets `torch._dynamo.config.allow_rnn = True` after the imports: Dynamo then traces the LSTM.
"""
import torch
from torch import nn

torch._dynamo.config.allow_rnn = True


class Encoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        h = self.proj(features).relu()
        out, _ = self.lstm(h)
        return out + h


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(2, 3, 4),)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
