"""GM524 negative: the MoE gate caches the Gumbel distribution itself and calls `rsample` on it.

Keeping the object, not its bound method, lets Dynamo replay the store: nothing here may be flagged,
and Dynamo must not break.
"""
from typing import Dict

import torch
from torch import nn
from torch.distributions import Gumbel

gumbel_map: Dict[torch.device, Gumbel] = {}


class SwitchGate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.proj(x)
        gumbel = gumbel_map.get(logits.device)
        if gumbel is None:
            gumbel = Gumbel(torch.tensor(0.0), torch.tensor(1.0))
            gumbel_map[logits.device] = gumbel
        return (logits + gumbel.rsample(logits.shape)).softmax(dim=-1)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    gumbel_map.clear()
    return SwitchGate(), [(torch.randn(3, 8),)]


compiled = torch.compile(SwitchGate())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
