"""GM101 positive: forward calls a same-file helper whose `if` tests a tensor value; the break is at the helper's line."""
import torch
from torch import nn


def maybe_renorm(h, max_norm):
    norm = h.norm(dim=-1, keepdim=True)
    if norm.max() > max_norm:  # expect: GM101
        h = h * (max_norm / norm.clamp_min(max_norm))
    return h


class Embedder(nn.Module):
    def __init__(self, dim=8, max_norm=1.0):
        super().__init__()
        self.fc = nn.Linear(dim, dim, bias=False)
        self.max_norm = max_norm

    def forward(self, x):
        h = self.fc(x)
        h = maybe_renorm(h, self.max_norm)
        return h + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = Embedder()
    with torch.no_grad():
        model.fc.weight.copy_(torch.eye(8))
    return model, [(torch.full((4, 8), 3.0),), (torch.full((4, 8), 0.01),)]


compiled = torch.compile(Embedder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
