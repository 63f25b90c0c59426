"""BigBird block-sparse attention, eval: the random block plan is an all-zero numpy array turned into a tensor.

Source: huggingface/transformers@v5.23.0:src/transformers/models/big_bird/modeling_big_bird.py:340-380,762-850
Kept: the training-only np.random.seed, _get_rand_attn_plan, _bigbird_block_rand_mask
(the eval early return, the np.random.permutation loop over blocks), the
per-head list, np.stack and torch.tensor(..., dtype=long), the expand over batch,
and a gather of key blocks by the plan.
Simplified: the plan helper "with_head" is replaced by per-head calls of
_bigbird_block_rand_mask; seq 32, block 4, 2 heads, 1 random block.
"""
import math

import numpy as np
import torch
from torch import nn


class BigBirdBlockSparseAttention(nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        self.seed = seed
        self.num_random_blocks = 1
        self.block_size = 4
        self.num_attention_heads = 2

    @staticmethod
    def _get_rand_attn_plan(from_seq_length, from_block_size, num_rand_blocks):
        plan_from_length = []
        plan_num_rand_blocks = []
        if (2 * num_rand_blocks + 5) < (from_seq_length // from_block_size):
            plan_from_length.append(int((2 * num_rand_blocks + 5) * from_block_size))
            plan_num_rand_blocks.append(num_rand_blocks)
            plan_from_length.append(from_seq_length)
            plan_num_rand_blocks.append(0)
        else:
            plan_from_length.append(from_seq_length)
            plan_num_rand_blocks.append(num_rand_blocks)
        return plan_from_length, plan_num_rand_blocks

    def _bigbird_block_rand_mask(self, from_seq_length, to_seq_length, from_block_size, to_block_size, num_rand_blocks, last_idx=-1):
        if from_seq_length // from_block_size != to_seq_length // to_block_size:
            raise ValueError("Error the number of blocks needs to be same!")
        rand_attn = np.zeros((from_seq_length // from_block_size - 2, num_rand_blocks), dtype=np.int32)
        if not self.training:
            return rand_attn
        middle_seq = np.arange(1, to_seq_length // to_block_size - 1, dtype=np.int32)
        last = to_seq_length // to_block_size - 1
        if last_idx > (2 * to_block_size):
            last = (last_idx // to_block_size) - 1
        r = num_rand_blocks
        for i in range(1, from_seq_length // from_block_size - 1):
            start = i - 2
            end = i
            if i == 1:
                rand_attn[i - 1, :] = np.random.permutation(middle_seq[2:last])[:r]
            elif i == 2:
                rand_attn[i - 1, :] = np.random.permutation(middle_seq[3:last])[:r]
            elif i == from_seq_length // from_block_size - 3:
                rand_attn[i - 1, :] = np.random.permutation(middle_seq[:last])[:r]
            elif i == from_seq_length // from_block_size - 2:
                rand_attn[i - 1, :] = np.random.permutation(middle_seq[:last])[:r]
            else:
                if start > last:
                    start = last
                    rand_attn[i - 1, :] = np.random.permutation(middle_seq[:start])[:r]
                elif (end + 1) == last:
                    rand_attn[i - 1, :] = np.random.permutation(middle_seq[:start])[:r]
                else:
                    rand_attn[i - 1, :] = np.random.permutation(
                        np.concatenate((middle_seq[:start], middle_seq[end + 1 : last]))
                    )[:r]
        return rand_attn

    def forward(self, query_layer, key_layer):
        batch_size, n_heads, from_seq_len, head = query_layer.shape
        from_block_size = to_block_size = self.block_size
        rsqrt_d = 1 / math.sqrt(head)
        if self.training:
            np.random.seed(self.seed)
        plan_from_length, plan_num_rand_blocks = self._get_rand_attn_plan(from_seq_len, from_block_size, self.num_random_blocks)
        rand_attn = [
            self._bigbird_block_rand_mask(from_seq_len, from_seq_len, from_block_size, to_block_size, plan_num_rand_blocks[0])
            for _ in range(n_heads)
        ]
        rand_attn = np.stack(rand_attn, axis=0)
        rand_attn = torch.tensor(rand_attn, device=query_layer.device, dtype=torch.long)
        rand_attn = rand_attn.unsqueeze(0).expand(batch_size, *rand_attn.shape).contiguous()
        blocked_key = key_layer.view(batch_size, n_heads, from_seq_len // to_block_size, to_block_size, -1)
        gathered = torch.stack([blocked_key[b, h][rand_attn[b, h, :, 0]] for b in range(batch_size) for h in range(n_heads)])
        middle_q = query_layer.view(batch_size, n_heads, -1, from_block_size, head)[:, :, 1:-1]
        scores = (middle_q.reshape(-1, *middle_q.shape[2:]) @ gathered.transpose(-1, -2)) * rsqrt_d
        return scores.softmax(-1)


attention = torch.compile(BigBirdBlockSparseAttention().train(False))


def make():
    torch.manual_seed(0)
    q = torch.randn(1, 2, 32, 4)
    return BigBirdBlockSparseAttention().train(False), [(q, torch.randn(1, 2, 32, 4))]
