"""GM403 bad: BigBird's random-attention plan sized with `np.sum` over a Python list (eval path).

Source: huggingface/transformers@v5.23.0:src/transformers/models/big_bird/modeling_big_bird.py:905-913
"""
import numpy as np
import torch
from torch import nn


class BlockSparsePlan(nn.Module):
    def __init__(self, block_size: int = 2, num_heads: int = 2) -> None:
        super().__init__()
        self.block_size = block_size
        self.num_heads = num_heads

    def forward(self, x: torch.Tensor, plan_num_rand_blocks: list) -> torch.Tensor:
        num_blocks = x.shape[1] // self.block_size
        max_plan_idx = 1
        rand_attn = np.zeros((num_blocks, np.sum(plan_num_rand_blocks[: max_plan_idx + 1])), dtype=np.int32)
        rand_attn = rand_attn[1 : num_blocks - 1, :]
        plan = torch.tensor(rand_attn, dtype=torch.long)
        return x[:, : plan.shape[0]] + plan.sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return BlockSparsePlan(), [(torch.randn(2, 8), [1, 1, 0])]


compiled = torch.compile(BlockSparsePlan())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
