"""GM103 positive: a module chooses a scale with `self.big if h.std() > 1 else self.small` (tensor-valued test)."""
import torch
from torch import nn


class AdaptiveScale(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim, bias=False)
        self.big = 0.5
        self.small = 2.0

    def forward(self, x):
        h = self.fc(x)
        scale = self.big if h.std() > 1 else self.small  # expect: GM103
        return h * scale


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = AdaptiveScale()
    with torch.no_grad():
        model.fc.weight.copy_(torch.eye(8))
    ramp = torch.linspace(-1.0, 1.0, 8).repeat(4, 1)
    return model, [(ramp * 10,), (ramp * 0.1,)]


compiled = torch.compile(AdaptiveScale())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
