"""GM101 positive: a module method with `if`/`elif` on `logits.max()` against module thresholds."""
import torch
from torch import nn


class LogitSoftCap(nn.Module):
    def __init__(self, dim=8, cap=20.0, floor=1.0):
        super().__init__()
        self.proj = nn.Linear(dim, dim, bias=False)
        self.cap = cap
        self.floor = floor

    def forward(self, x):
        logits = self.proj(x)
        peak = logits.abs().max()
        if peak > self.cap:  # expect: GM101
            logits = self.cap * torch.tanh(logits / self.cap)
        elif peak < self.floor:  # expect: GM101
            logits = logits * (self.floor / (peak + 1e-6))
        return logits.softmax(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = LogitSoftCap()
    with torch.no_grad():
        model.proj.weight.copy_(torch.eye(8))
    return model, [(torch.full((4, 8), 50.0),), (torch.full((4, 8), 0.1),), (torch.full((4, 8), 5.0),)]


compiled = torch.compile(LogitSoftCap())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
