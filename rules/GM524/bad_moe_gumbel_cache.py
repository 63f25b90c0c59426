"""GM524: an MoE gate caches the bound `rsample` of a Gumbel distribution it built (GB0092).

deepspeed's `gumbel_rsample` (copied into LLaMA-MoE's switch gate) keeps `Gumbel(zero, one).rsample`
in a module-level dict keyed by device; here the gate's `forward` does it itself.
"""
from typing import Callable, Dict

import torch
from torch import nn
from torch.distributions import Gumbel

gumbel_map: Dict[torch.device, Callable] = {}


class SwitchGate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.proj(x)
        gumbel = gumbel_map.get(logits.device)
        if gumbel is None:
            gumbel = Gumbel(torch.tensor(0.0), torch.tensor(1.0)).rsample
            gumbel_map[logits.device] = gumbel
        return (logits + gumbel(logits.shape)).softmax(dim=-1)


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
