"""GM204 bad: a traced `random` draw Python needs the value of (Vim's random class-token position).

Dynamo traces `random.randint` / `random.uniform` itself and holds the draw in a tensor. Python then
needs its value: the branch on it breaks at the test (GB0170), and in the frame resumed after that
break `int()` of a fresh draw cannot be folded (GB0178).
"""
import random

import torch
from torch import nn


class InsertToken(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        position = random.randint(0, x.shape[1])
        if position > 1:
            x = x * 2
        scale = int(random.uniform(1, 4))
        return torch.cat((x[:, :position], x[:, position:] * scale), dim=1)


def make():
    """Return (eager_callable, input_sets)."""
    random.seed(1)
    return InsertToken(), [(torch.randn(2, 4),)] * 3


compiled = torch.compile(InsertToken())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
