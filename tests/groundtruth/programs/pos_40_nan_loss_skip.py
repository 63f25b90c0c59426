"""GM101 positive: skip a bad step by zeroing a NaN loss (`if torch.isnan(loss):`); the body assigns, so it is not a GM104 guard."""
import torch
from torch import nn


class Regressor(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, 1)

    def forward(self, x, target):
        loss = (self.fc(x).squeeze(-1) - target).pow(2).mean()
        if torch.isnan(loss):  # expect: GM101
            loss = torch.zeros_like(loss)
        return loss * 0.5


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    good = torch.zeros(4)
    bad = torch.tensor([0.0, float("nan"), 0.0, 0.0])
    return Regressor(), [(x, good), (x, bad)]


compiled = torch.compile(Regressor())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
