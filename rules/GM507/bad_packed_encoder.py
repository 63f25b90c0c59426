"""GM507 bad: a Tacotron2-style encoder packs padded features before its LSTM.

`pack_padded_sequence` lives in a file Dynamo skips: the graph ends at the call.
"""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, features: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        h = self.proj(features).relu()
        packed = nn.utils.rnn.pack_padded_sequence(h, lengths, batch_first=True)
        return packed.data.sum(0) + 1


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(2, 3, 4), torch.tensor([3, 2]))]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
