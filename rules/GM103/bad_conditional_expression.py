"""GM103 bad: a conditional expression `a if x.mean() > 0 else b` whose test is a tensor value."""
import torch
from torch import nn


class SignedResidual(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        h = self.fc(x)
        out = x + h if h.mean() > 0 else x - h  # expect: GM103
        return out * 2


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = SignedResidual()
    with torch.no_grad():
        model.fc.weight.copy_(torch.eye(8))
    return model, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(SignedResidual())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
