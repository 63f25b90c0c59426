"""GM509 negative: the lock is taken around the call of the compiled function, not inside it.

Adapted from huggingface/transformers@v5.23.0:src/transformers/utils/output_capturing.py:223-245
"""
import threading

import torch
from torch import nn

_hook_installation_lock = threading.Lock()


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).relu()


compiled = torch.compile(Encoder())


def run(x: torch.Tensor) -> torch.Tensor:
    with _hook_installation_lock:
        return compiled(x)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(2, 4),)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
