"""GM501 bad: recurrent layers the calling class does not build itself.

A factory picks `nn.LSTM` or `nn.GRU`, a `ModuleList` holds them and a loop walks it, and the
model takes a subclass of `nn.LSTM` as a constructor argument. Dynamo refuses every one of them
(an `isinstance` check on the three classes, subclasses included) where it first reads it, and runs
that function eagerly. The unsafe fix sets `torch._dynamo.config.allow_rnn = True`.
"""
import torch
from torch import nn


class BidirectionalLSTM(nn.LSTM):
    def __init__(self, dim: int) -> None:
        super().__init__(dim, dim, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, hx=None) -> torch.Tensor:
        y, _ = super().forward(x, hx)
        return y


def make_rnn(kind: str, dim: int) -> nn.Module:
    if kind == "lstm":
        return nn.LSTM(dim, dim, batch_first=True)
    return nn.GRU(dim, dim, batch_first=True)


class RecurrentStack(nn.Module):
    def __init__(self, kinds: list[str]) -> None:
        super().__init__()
        self.layers = nn.ModuleList([make_rnn(kind, 4) for kind in kinds])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x, _ = layer(x)
        return x


class Tagger(nn.Module):
    def __init__(self, head: nn.Module) -> None:
        super().__init__()
        self.stack = RecurrentStack(["lstm", "gru"])
        self.head = head
        self.proj = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stack(x)
        return self.proj(self.head(x))


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Tagger(BidirectionalLSTM(4)), [(torch.randn(2, 3, 4),)]


compiled = torch.compile(Tagger(BidirectionalLSTM(4)))

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
