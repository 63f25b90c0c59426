"""GM301 bad: a flag copied to Python only to choose a branch (`flag = m.any().item()` then `if flag:`).

The fix keeps the flag a tensor, and GM101 then rewrites the branch, which calls
a submodule, with `torch.cond` in the next fix round (both fixes unsafe).
"""
import torch
from torch import nn


class GlobalAttentionGate(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.local = nn.Linear(dim, dim)
        self.glob = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        is_index_global_attn = attention_mask > 0
        is_global_attn = is_index_global_attn.flatten().any().item()
        h = self.local(x)
        if is_global_attn:
            h = h + self.glob(x)
        return h


def make():
    """Return (eager_callable, input_sets): some global tokens, and none (an all-false mask)."""
    torch.manual_seed(0)
    x = torch.randn(2, 6, 4)
    some = torch.tensor([[0, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0]])
    return GlobalAttentionGate(), [(x, some), (x, torch.zeros(2, 6, dtype=torch.long))]


compiled = torch.compile(GlobalAttentionGate())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
