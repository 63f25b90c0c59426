"""GM303 bad: centring skipped when the mean is already zero, tested with `torch.allclose` (both branches assign)."""
import torch
from torch import nn


class Centre(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean()
        centred = torch.where(
            torch.isclose(mean, torch.zeros_like(mean), atol=1e-6).all(),
            x.relu(),
            (x - mean).relu(),
        )
        return centred


def make():
    """Return (eager_callable, input_sets): a zero-mean and a shifted input (both branches)."""
    zero_mean = torch.tensor([[1.0, -1.0], [2.0, -2.0]])
    return Centre(), [(zero_mean,), (zero_mean + 3.0,)]


compiled = torch.compile(Centre())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
