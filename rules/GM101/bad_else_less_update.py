"""GM101 bad: an else-less `if` on a tensor value that updates a name in place (clamp-style guard)."""
import torch
from torch import nn


class ClampedAttentionScores(nn.Module):
    def __init__(self, dim=8, cap=5.0):
        super().__init__()
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.cap = cap

    def forward(self, x):
        scores = self.q(x) @ self.k(x).transpose(-2, -1)
        if scores.abs().max() > self.cap:  # expect: GM101
            scores = scores.clamp(-self.cap, self.cap)
        return scores.softmax(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = ClampedAttentionScores()
    with torch.no_grad():
        model.q.weight.copy_(torch.eye(8))
        model.k.weight.copy_(torch.eye(8))
    return model, [(torch.full((4, 8), 2.0),), (torch.full((4, 8), 0.1),)]


compiled = torch.compile(ClampedAttentionScores())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
