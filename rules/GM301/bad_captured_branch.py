"""GM301 bad: with `capture_scalar_outputs` on, `.item()` is traced, but the `if` on the number breaks.

The break moves from the conversion (line 14) to the branch (line 16).
"""
import torch
from torch import nn

torch._dynamo.config.capture_scalar_outputs = True


class ClipByNorm(nn.Module):
    def forward(self, grad: torch.Tensor) -> torch.Tensor:
        scaled = grad * 2
        norm = scaled.norm().item()
        limit = 1.0
        if norm > limit:
            scaled = scaled * (limit / norm)
        return scaled


def make():
    """Return (eager_callable, input_sets) taking both sides of the branch."""
    return ClipByNorm(), [(torch.full((4,), 3.0),), (torch.full((4,), 0.01),)]


compiled = torch.compile(ClipByNorm())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
