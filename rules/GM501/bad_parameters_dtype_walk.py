"""GM501 bad: a speech model that casts its input to its weights' dtype with
`next(self.parameters()).dtype` before running an LSTM encoder held by a submodule (the idiom
of models that may be loaded in half precision).

`self.parameters()` walks every submodule, the LSTM among them: Dynamo refuses RNN modules
("Attempted to wrap RNN, GRU, or LSTM", GB0014) at that call, resumes after it, and refuses
the LSTM again where the encoder reads it.
"""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lstm = nn.LSTM(dim, dim, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return out


class SpeechModel(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.encoder = Encoder(dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        dtype = next(self.parameters()).dtype
        hidden = self.encoder(features.to(dtype))
        return self.head(hidden).log_softmax(-1)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return SpeechModel(), [(torch.randn(2, 5, 4),)]


model = torch.compile(SpeechModel())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
