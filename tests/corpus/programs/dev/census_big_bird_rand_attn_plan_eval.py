"""BigBird block-sparse attention in eval: numpy random-attention plan (`np.zeros` sized by `np.sum` of the
plan, `np.stack`) turned into a tensor inside forward.

Source: huggingface/transformers@v5.23.0:src/transformers/models/big_bird/modeling_big_bird.py:340-380, 762-915
Census: penguinwu/oss-model-graph-break-corpus: BigBirdModel / BigBirdPegasusModel are graph-break models in
eval and train; issue 14 names "np.sum/np.zeros over numpy plans (big_bird's random block plan)".
Kept: `_get_rand_attn_plan`, the eval path of `_bigbird_block_rand_mask_with_head` (plan index, `np.array(plan)
// block`, per-head `np.zeros((num_blocks, np.sum(...)))`, the eval slice), the caller's `np.stack` +
`torch.tensor` + expand, and the training-only seeding.
Simplified: the random (training) branch of the mask helper is omitted; the attention itself is a gather.
"""
import numpy as np
import torch
from torch import nn


class BigBirdBlockSparseAttention(nn.Module):
    def __init__(self, num_attention_heads=2, num_random_blocks=1, block_size=2, seed=0):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.num_random_blocks = num_random_blocks
        self.block_size = block_size
        self.seed = seed

    @staticmethod
    def _get_rand_attn_plan(from_seq_length, from_block_size, num_rand_blocks):
        plan_from_length = []
        plan_num_rand_blocks = []
        if (2 * num_rand_blocks + 5) < (from_seq_length // from_block_size):
            plan_from_length.append(int((2 * num_rand_blocks + 5) * from_block_size))
            plan_num_rand_blocks.append(num_rand_blocks)
            plan_from_length.append(from_seq_length)
            plan_num_rand_blocks.append(0)
        elif (num_rand_blocks + 5) < (from_seq_length // from_block_size):
            plan_from_length.append(int((num_rand_blocks + 5) * from_block_size))
            plan_num_rand_blocks.append(num_rand_blocks // 2)
            plan_from_length.append(from_seq_length)
            plan_num_rand_blocks.append(num_rand_blocks - (num_rand_blocks // 2))
        else:
            plan_from_length.append(from_seq_length)
            plan_num_rand_blocks.append(num_rand_blocks)
        return plan_from_length, plan_num_rand_blocks

    def _bigbird_block_rand_mask_with_head(self, from_seq_length, to_seq_length, from_block_size, to_block_size,
                                           num_heads, plan_from_length, plan_num_rand_blocks,
                                           global_block_top=1, global_block_bottom=1):
        if from_seq_length // from_block_size != to_seq_length // to_block_size:
            raise ValueError("Error the number of blocks needs to be same!")
        if from_seq_length not in plan_from_length:
            raise ValueError("Error from sequence length not in plan!")
        num_blocks = from_seq_length // from_block_size
        plan_block_length = np.array(plan_from_length) // from_block_size
        max_plan_idx = plan_from_length.index(from_seq_length)
        rand_attn = [
            np.zeros((num_blocks, np.sum(plan_num_rand_blocks[: max_plan_idx + 1])), dtype=np.int32)
            for i in range(num_heads)
        ]
        # During inference (eval) no randomness
        if not self.training:
            for nh in range(num_heads):
                rand_attn[nh] = rand_attn[nh][global_block_top : num_blocks - global_block_bottom, :]
            return rand_attn
        raise NotImplementedError("training plan omitted in this translation")

    def forward(self, query_layer, plan_from_length=None, plan_num_rand_blocks=None):
        batch_size, n_heads, from_seq_len, _ = query_layer.shape
        to_seq_len = from_seq_len
        from_block_size = to_block_size = self.block_size
        n_rand_blocks = self.num_random_blocks
        # Only seed while training: in eval the helpers below return a constant all-zero list.
        if self.training:
            np.random.seed(self.seed)
        if plan_from_length is None:
            plan_from_length, plan_num_rand_blocks = self._get_rand_attn_plan(
                from_seq_len, from_block_size, n_rand_blocks
            )
        rand_attn = self._bigbird_block_rand_mask_with_head(
            from_seq_length=from_seq_len,
            to_seq_length=to_seq_len,
            from_block_size=from_block_size,
            to_block_size=to_block_size,
            num_heads=n_heads,
            plan_from_length=plan_from_length,
            plan_num_rand_blocks=plan_num_rand_blocks,
        )
        rand_attn = np.stack(rand_attn, axis=0)
        rand_attn = torch.tensor(rand_attn, device=query_layer.device, dtype=torch.long)
        rand_attn = rand_attn.unsqueeze(0).expand(batch_size, *rand_attn.shape).contiguous()
        blocked = query_layer.view(batch_size, n_heads, from_seq_len // from_block_size, from_block_size, -1)
        gathered = torch.stack([blocked[b, h, rand_attn[b, h, :, 0]] for b in range(batch_size) for h in range(n_heads)])
        return gathered.sum()


attn = torch.compile(BigBirdBlockSparseAttention().eval())


def make():
    torch.manual_seed(0)
    return BigBirdBlockSparseAttention().eval(), [(torch.randn(1, 2, 8, 3),), (torch.randn(1, 2, 20, 3),)]
