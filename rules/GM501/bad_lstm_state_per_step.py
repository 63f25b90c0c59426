"""GM501 bad: a recurrent policy stepping its `nn.LSTM` one time step at a time, resetting on episode ends.

Dynamo refuses the LSTM where `forward` first reads it (`self.lstm.input_size`), lines before the call,
and runs the whole function eagerly. The unsafe fix sets `torch._dynamo.config.allow_rnn = True`.
"""
import torch
from torch import nn


class RecurrentPolicy(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lstm = nn.LSTM(dim, dim)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], done: torch.Tensor):
        batch = state[0].shape[1]
        steps = x.reshape((-1, batch, self.lstm.input_size))
        outputs = []
        for h, d in zip(steps, done.reshape((-1, batch))):
            keep = (1.0 - d).view(1, -1, 1)
            h, state = self.lstm(h.unsqueeze(0), (keep * state[0], keep * state[1]))
            outputs.append(h)
        return torch.cat(outputs), state


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    state = (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))
    return RecurrentPolicy(), [(torch.randn(3, 2, 4), state, torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))]


compiled = torch.compile(RecurrentPolicy())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
