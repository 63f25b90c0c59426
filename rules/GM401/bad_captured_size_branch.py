"""GM401 bad: with `capture_dynamic_output_shape_ops` on, `nonzero` is traced, but branching on its size breaks.

The break moves from the operator (line 14) to the branch on `len(hit)` (line 15).
"""
import torch
from torch import nn

torch._dynamo.config.capture_dynamic_output_shape_ops = True


class Router(nn.Module):
    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        probs = scores.softmax(-1)
        hit = torch.nonzero(probs.amax(-1) > 0.9)
        if len(hit) == 0:
            return probs
        return probs * 2


def make():
    """Return (eager_callable, input_sets): confident and unconfident routing (both branches)."""
    torch.manual_seed(0)
    return Router(), [(torch.tensor([[10.0, 0.0], [0.0, 10.0]]),), (torch.zeros(2, 2),)]


compiled = torch.compile(Router())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
