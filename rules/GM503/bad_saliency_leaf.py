"""GM503 bad: an input-gradient (saliency) head makes a detached copy of the features require grad.

The detached copy is a tensor computed in the graph: it is still alive at the `torch.autograd.grad`
break (GM507), and a value derived from it is returned, so Dynamo breaks at `requires_grad_()` (GB8985).
"""
import torch
from torch import nn


class SaliencyHead(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.score = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor):
        features = self.proj(x)
        probe = features.detach().requires_grad_()
        with torch.enable_grad():
            score = self.score(probe).sum()
            (saliency,) = torch.autograd.grad(score, probe)
        return features, saliency.abs()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return SaliencyHead(), [(torch.randn(2, 4),)]


compiled = torch.compile(SaliencyHead())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
