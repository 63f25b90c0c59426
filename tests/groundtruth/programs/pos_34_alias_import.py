"""GM101 positive: `import torch as T`; `if T.any(x < 0)` is still a tensor-value test."""
import torch as T
from torch import nn


class ReluIfNeeded(nn.Module):
    def forward(self, x):
        y = x * 2
        if T.any(y < 0):  # expect: GM101
            y = T.relu(y)
        return y + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return ReluIfNeeded(), [(T.ones(4, 8),), (-T.ones(4, 8),)]


compiled = T.compile(ReluIfNeeded())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
