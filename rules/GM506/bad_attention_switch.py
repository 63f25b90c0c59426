"""GM506 bad: BigBird's `set_attention_type`, which builds a new attention module inside forward on short inputs.

The block-sparse module is built only for a value the compiled forward never passes: neither it nor GM506 breaks there.

Source: huggingface/transformers@v5.23.0:src/transformers/models/big_bird/modeling_big_bird.py:132-145,1081-1103
"""
import torch
from torch import nn


class FullAttention(nn.Module):
    def __init__(self, hidden_size: int = 8) -> None:
        super().__init__()
        self.scale = hidden_size**-0.5
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        scores = self.query(hidden) @ self.key(hidden).transpose(-1, -2) * self.scale
        return self.dropout(scores.softmax(-1)) @ hidden


class SparseAttention(nn.Module):
    def __init__(self, hidden_size: int = 8) -> None:
        super().__init__()
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return (self.query(hidden) * self.key(hidden)).sigmoid() * hidden


class Attention(nn.Module):
    def __init__(self, hidden_size: int = 8) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.attention_type = "block_sparse"
        self.self = FullAttention(hidden_size)

    def set_attention_type(self, value: str) -> None:
        if value == self.attention_type:
            return
        self.attention_type = value
        if value == "original_full":
            attn_weights = FullAttention(self.hidden_size)
        else:
            attn_weights = SparseAttention(self.hidden_size)
        attn_weights.query = self.self.query
        attn_weights.key = self.self.key
        self.self = attn_weights

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if hidden.shape[1] < 16:
            self.set_attention_type("original_full")
        return self.self(hidden)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Attention(), [(torch.randn(2, 5, 8),)]


compiled = torch.compile(Attention())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
