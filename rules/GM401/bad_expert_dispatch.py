"""GM401 bad: mixture-of-experts dispatch by data-dependent selection (display-only).

`nonzero()` on the hit experts and the single-argument `torch.where` both have
data-dependent sizes; inside the loop the break makes Dynamo run the whole
forward eagerly.
"""
import torch
from torch import nn


class TinyMoE(nn.Module):
    def __init__(self, dim: int = 4, num_experts: int = 3) -> None:
        super().__init__()
        self.num_experts = num_experts
        self.router = nn.Linear(dim, num_experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        top = self.router(x).argmax(-1)
        expert_mask = torch.nn.functional.one_hot(top, self.num_experts).T
        out = torch.zeros_like(x)
        hit = (expert_mask.sum(-1) > 0).nonzero()
        for e in hit:
            (rows,) = torch.where(expert_mask[e.item()])
            out[rows] = self.experts[e.item()](x[rows])
        return out


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return TinyMoE(), [(torch.randn(6, 4),)]


compiled = torch.compile(TinyMoE())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
