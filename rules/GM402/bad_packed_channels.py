"""GM402 bad: a WaveNet gate sliced by an element of a tensor packed from a Python int (VITS), safe fix.

`torch.IntTensor([self.hidden_size])[0]` is a 0-d tensor: Dynamo copies it to
the host at each slice it bounds (GB0124). The fix passes `self.hidden_size`,
the integer it was built from: the same elements, no copy.
"""
import torch
from torch import nn


def gated_activation(input_a: torch.Tensor, input_b: torch.Tensor, num_channels):
    in_act = input_a + input_b
    t_act = torch.tanh(in_act[:, :num_channels, :])
    s_act = torch.sigmoid(in_act[:, num_channels:, :])
    return t_act * s_act


class WaveNet(nn.Module):
    def __init__(self, hidden_size: int = 4, num_layers: int = 2) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.in_layers = nn.ModuleList(
            nn.Conv1d(hidden_size, 2 * hidden_size, 3, padding=1) for _ in range(num_layers)
        )

    def forward(self, hidden_states: torch.Tensor, global_states: torch.Tensor) -> torch.Tensor:
        output = torch.zeros_like(hidden_states)
        num_channels_tensor = torch.IntTensor([self.hidden_size])
        for layer in self.in_layers:
            acts = gated_activation(layer(hidden_states), global_states, num_channels_tensor[0])
            output = output + acts
            hidden_states = hidden_states + acts
        return output


def make():
    """Return (eager_callable, input_sets): one batch, and a longer sequence."""
    torch.manual_seed(0)
    return WaveNet(), [
        (torch.randn(2, 4, 6), torch.randn(2, 8, 1)),
        (torch.randn(1, 4, 9), torch.randn(1, 8, 1)),
    ]


compiled = torch.compile(WaveNet())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
