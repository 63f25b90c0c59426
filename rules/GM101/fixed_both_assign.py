"""GM101 bad: `if`/`else` on a tensor value where both branches assign the same name."""
import torch
from torch import nn


class SignAwareScale(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        h = self.fc(x)
        # expect: GM101
        out = torch.where(h.sum() > 0, h * 2, h / 2)
        return out + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = SignAwareScale()
    with torch.no_grad():
        model.fc.weight.copy_(torch.eye(8))
    return model, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(SignAwareScale())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
