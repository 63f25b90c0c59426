"""GM501 bad: a dual-path separator builds its recurrent layer by name, `getattr(nn, rnn_type)(...)` (torchaudio's SQUIM).

`rnn_type` is `"LSTM"` wherever the file passes it, so the layer is an `nn.LSTM`: Dynamo refuses it and runs
`SingleRNN.forward` eagerly. (No fixed twin: with the unsafe fix's `allow_rnn`, this LSTM compiled with
`fullgraph=True` while autograd records fails in inductor on torch 2.13 CPU, `mkldnn_rnn_layer`.)
"""
import torch
from torch import nn


class SingleRNN(nn.Module):
    def __init__(self, rnn_type: str, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.rnn = getattr(nn, rnn_type)(input_size, hidden_size, 1, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(hidden_size * 2, input_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.proj(out)


class DualPath(nn.Module):
    def __init__(self, feat_dim: int = 4, hidden_dim: int = 4, rnn_type: str = "LSTM") -> None:
        super().__init__()
        self.row_rnn = SingleRNN(rnn_type, feat_dim, hidden_dim)
        self.norm = nn.GroupNorm(1, feat_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = self.row_rnn(x)
        return x + self.norm(rows.transpose(1, 2)).transpose(1, 2)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return DualPath(), [(torch.randn(2, 5, 4),)]


compiled = torch.compile(DualPath())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
