"""GM103 positive: a helper returns `x * 2 if x.sum() > 0 else x / 2`; the conditional expression breaks inside the helper."""
import torch
from torch import nn


def scale_by_sign(x):
    return x * 2 if x.sum() > 0 else x / 2  # expect: GM103


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        h = self.fc(x)
        return scale_by_sign(h) + x


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = Block()
    with torch.no_grad():
        model.fc.weight.copy_(torch.eye(8))
    return model, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
