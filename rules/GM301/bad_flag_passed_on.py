"""GM301 bad: a flag copied to Python and passed on to layers, as transformers' longformer encoder does.

`is_global_attn = is_index_global_attn.flatten().any().item()` feeds layer
calls as well as branches, so keeping it a tensor is not provably enough:
display-only, with `capture_scalar_outputs` named as the alternative.
"""
import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.local = nn.Linear(dim, dim)
        self.glob = nn.Linear(dim, dim)

    def forward(self, h: torch.Tensor, is_global_attn: bool) -> torch.Tensor:
        out = self.local(h)
        if is_global_attn:
            out = out + self.glob(h)
        return out


class Encoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Layer(dim) for _ in range(2))

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        is_index_global_attn = attention_mask > 0
        is_global_attn = is_index_global_attn.flatten().any().item()
        for layer in self.layers:
            x = layer(x, is_global_attn=is_global_attn)
        return x


def make():
    """Return (eager_callable, input_sets): some global tokens, and none (an all-false mask)."""
    torch.manual_seed(0)
    x = torch.randn(2, 6, 4)
    some = torch.tensor([[0, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0]])
    return Encoder(), [(x, some), (x, torch.zeros(2, 6, dtype=torch.long))]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
