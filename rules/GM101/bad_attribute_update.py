"""GM101 bad: an I-BERT-style running range kept in buffers: `if` on their values, then `elif` on a Python setting, each branch re-assigning the same `self.` attributes."""
import torch
from torch import nn


class RunningRange(nn.Module):
    def __init__(self, momentum=0.95):
        super().__init__()
        self.momentum = momentum
        self.x_min = nn.Buffer(torch.zeros(1) - 1e-5)
        self.x_max = nn.Buffer(torch.zeros(1) + 1e-5)

    def forward(self, x):
        x_min = x.detach().min()
        x_max = x.detach().max()
        if self.x_min.min() > -1.1e-5 and self.x_max.max() < 1.1e-5:  # expect: GM101
            self.x_min = self.x_min + x_min
            self.x_max = self.x_max + x_max
        elif self.momentum == -1:
            self.x_min = torch.min(self.x_min, x_min)
            self.x_max = torch.max(self.x_max, x_max)
        else:
            self.x_min = self.x_min * self.momentum + x_min * (1 - self.momentum)
            self.x_max = self.x_max * self.momentum + x_max * (1 - self.momentum)
        scale = (self.x_max - self.x_min).clamp(min=1e-8)
        return x / scale, self.x_min.clone(), self.x_max.clone()


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    Each call mutates the buffers, so a fresh module per momentum: its first call initialises
    the range, the later ones take the `elif` (momentum -1) or the moving average.
    """
    minmax, ema = RunningRange(-1), RunningRange(0.9)

    def run(momentum, x):
        return (minmax if momentum == -1 else ema)(x)

    x = torch.linspace(-2.0, 3.0, 8)
    return run, [(-1, x), (-1, 2 * x), (0.9, x), (0.9, 2 * x)]


compiled = torch.compile(RunningRange(0.9))

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
