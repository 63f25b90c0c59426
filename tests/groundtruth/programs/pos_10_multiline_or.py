"""GM101 positive: a multi-line `or` condition; Dynamo attributes one break to each tensor operand's line."""
import torch
from torch import nn


class OutlierClip(nn.Module):
    def __init__(self, limit=10.0):
        super().__init__()
        self.limit = limit

    def forward(self, x):
        h = x * 3
        if (h.max() > self.limit  # expect: GM101
                or h.min() < -self.limit):  # expect: GM101
            h = h.clamp(-self.limit, self.limit)
        return h + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    big = torch.full((4, 8), 5.0)
    small_neg = torch.full((4, 8), -5.0)
    calm = torch.zeros(4, 8)
    # big: first operand true; small_neg: second operand true; calm: both false
    return OutlierClip(), [(big,), (small_neg,), (calm,)]


compiled = torch.compile(OutlierClip())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
