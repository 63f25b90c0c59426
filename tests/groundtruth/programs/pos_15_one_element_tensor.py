"""GM101 positive: `if use_gate:` where use_gate is a 1-element bool tensor; its truth value is data."""
import torch
from torch import nn


class GatedResidual(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        use_gate = (x.abs().amax() > 1.0).reshape(1)
        h = self.fc(x)
        if use_gate:  # expect: GM101
            h = h * torch.sigmoid(h)
        return x + h


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    return GatedResidual(), [(torch.full((4, 8), 2.0),), (torch.full((4, 8), 0.5),)]


compiled = torch.compile(GatedResidual())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
