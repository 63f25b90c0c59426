"""GM507 bad: an audio encoder that switches cuDNN off around its convolution, as PE-Audio does.

`torch.backends.cudnn.flags` is a context manager Dynamo does not support.
"""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.conv = nn.Conv1d(dim, dim, 3, padding=1)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        with torch.no_grad(), torch.backends.cudnn.flags(enabled=False):
            hidden = self.conv(audio)
        return hidden.relu()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(2, 4, 5),)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
