"""GM501 bad: a tagger whose LSTM is built by a shared base class's `__init__` and called in
the subclass's `forward` (the layout of sequence-labelling heads that share one encoder).

Dynamo refuses the `nn.LSTM` where `forward` reads it ("Attempted to wrap RNN, GRU, or
LSTM", GB0014), and runs the rest of the frame eagerly.
"""
import torch
from torch import nn


class RecurrentBase(nn.Module):
    def __init__(self, dim: int = 4, tags: int = 3) -> None:
        super().__init__()
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, tags)


class Tagger(RecurrentBase):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(out).log_softmax(-1)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Tagger(), [(torch.randn(2, 5, 4),)]


tagger = torch.compile(Tagger())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
