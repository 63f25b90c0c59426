"""GM505 bad: transformers' output-capturing wrapper around a forward that breaks (a CTRL-style buffer).

Source: huggingface/transformers@v5.23.0:src/transformers/utils/output_capturing.py:326-365 (capture_outputs)
Kept: the dict comprehension over the registry's flags, and the forward called inside try/finally.
Simplified: no hooks, no registry class, one flag.
"""
from functools import wraps

import torch
from torch import nn

CAN_RECORD = {"hidden_states": 0, "attentions": 1}


def capture_outputs(func):
    @wraps(func)
    def wrapper(self, *args, **kwargs):
        recordable_keys = {
            f"output_{k}": kwargs.pop(f"output_{k}", getattr(self.config, f"output_{k}", False))
            for k in tuple(CAN_RECORD)
        }
        collected = {k: [] for k, v in recordable_keys.items() if v}
        try:
            outputs = func(self, *args, **kwargs)
        finally:
            collected.clear()
        return outputs

    return wrapper


class Config:
    output_hidden_states = False
    output_attentions = False


class Model(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.config = Config()
        self.fc = nn.Linear(dim, dim)
        self.scale = nn.Buffer(torch.ones(dim), persistent=False)

    @capture_outputs
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.scale.to(x.dtype)
        return self.fc(x) * scale


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Model(), [(torch.randn(3, 4),)]


compiled = torch.compile(Model())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
