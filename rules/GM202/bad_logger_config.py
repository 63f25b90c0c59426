"""GM202 bad: raising a logger's level from inside a forward (a debug switch on the module).

Dynamo refuses every `logging.Logger` method, configuration included (GB0291). No fix: guarded
with `torch.compiler.is_compiling()`, the level would silently stay unchanged when compiled.
"""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Encoder(nn.Module):
    def __init__(self, dim=8, debug=False):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.debug = debug

    def forward(self, x):
        h = torch.relu(self.inp(x))
        logger.setLevel(logging.DEBUG if self.debug else logging.WARNING)
        return h * 2


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(3, 8),)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
