"""GM509 bad: transformers installs its output-capturing hooks under a lock on a model's first call.

Source: huggingface/transformers@v5.23.0:src/transformers/utils/output_capturing.py:223-245
(shortened: a flag stands for the hooks)
"""
import threading

import torch
from torch import nn

_hook_installation_lock = threading.Lock()


def maybe_install_capturing_hooks(model: nn.Module) -> None:
    if getattr(model, "_output_capturing_hooks_installed", False):
        return
    with _hook_installation_lock:
        if getattr(model, "_output_capturing_hooks_installed", False):
            return
        model._output_capturing_hooks_installed = True


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        maybe_install_capturing_hooks(self)
        return self.proj(x).relu()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(2, 4),)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
