"""GM404 bad: a channel covariance filled pair by pair over the rows of `torch.cartesian_prod` (open-unmix).

Each row of `torch.cartesian_prod(a, b)` is a 1-d tensor, so `index[0]` is a 0-d tensor: as a
position of a multi-axis index it goes through `__index__`, and Dynamo converts it to a Python int
(GB0033). The value is computed before the store, so its index breaks first; after a break in a
loop Dynamo runs the function eagerly, and the store's own index is never reached.
"""
import torch
from torch import nn


class Covariance(nn.Module):
    def forward(self, y: torch.Tensor) -> torch.Tensor:
        channels = y.shape[-1]
        cov = torch.zeros(y.shape[0], channels, channels)
        for index in torch.cartesian_prod(torch.arange(channels), torch.arange(channels)):
            cov[:, index[0], index[1]] = (
                y[:, index[0]] * y[:, index[1]]
            )
        return cov


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Covariance(), [(torch.randn(3, 2),)]


compiled = torch.compile(Covariance())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
