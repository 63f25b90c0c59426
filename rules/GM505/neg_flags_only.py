"""GM505 negative: the wrapper's comprehension reads only Python values (its frame holds no module or tensor).

Dynamo does not compile such a frame on its own. Nothing here may be flagged, and Dynamo must not break.
"""
from functools import wraps

import torch
from torch import nn

CAN_RECORD = {"hidden_states": 0, "attentions": 1}


def capture_outputs(func):
    @wraps(func)
    def wrapper(self, *args, **kwargs):
        collected = {k: [] for k in CAN_RECORD}
        try:
            outputs = func(self, *args, **kwargs)
        finally:
            collected.clear()
        return outputs

    return wrapper


class Model(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    @capture_outputs
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).relu()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Model(), [(torch.randn(3, 4),)]


compiled = torch.compile(Model())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
