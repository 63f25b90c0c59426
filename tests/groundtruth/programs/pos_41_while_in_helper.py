"""GM102 positive: a same-file helper with `while (probs.max(-1).values > cap).any()` (tensor-valued loop test) called from forward."""
import torch
from torch import nn


def sharpen_until_capped(logits, cap):
    probs = logits.softmax(-1)
    while (probs.max(-1).values > cap).any():  # expect: GM102
        logits = logits * 0.5
        probs = logits.softmax(-1)
    return probs


class CappedHead(nn.Module):
    def __init__(self, dim=8, cap=0.5):
        super().__init__()
        self.fc = nn.Linear(dim, dim, bias=False)
        self.cap = cap

    def forward(self, x):
        return sharpen_until_capped(self.fc(x), self.cap)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = CappedHead()
    with torch.no_grad():
        model.fc.weight.copy_(torch.eye(8))
    peaked = torch.eye(8)[:4] * 10
    flat = torch.zeros(4, 8)
    return model, [(peaked,), (flat,)]


compiled = torch.compile(CappedHead())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
