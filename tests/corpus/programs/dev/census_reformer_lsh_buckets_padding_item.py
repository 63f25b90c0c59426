"""Reformer LSH hashing: `attention_mask.sum().item() < batch_size * attention_mask.shape[-1]` adds a
padding bucket.

Source: huggingface/transformers@v5.23.0:src/transformers/models/reformer/modeling_reformer.py:705-765
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): ReformerModel train,
`if attention_mask is not None and (attention_mask.sum().item() < batch_size * ...)`.
Kept: `_hash_vectors`'s random rotations, argmax buckets, the padding-bucket branch with torch.where,
the `increase_num_buckets` elif and the offsets.
Simplified: num_buckets is an int (no factorised buckets); one hash round.
"""
import torch
from torch import nn


class LSHSelfAttention(nn.Module):
    def __init__(self, num_buckets=4, num_attention_heads=1, attention_head_size=4, hash_seed=0):
        super().__init__()
        self.num_buckets = num_buckets
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = attention_head_size
        self.hash_seed = hash_seed
        self.query_key = nn.Linear(attention_head_size, attention_head_size, bias=False)

    def _hash_vectors(self, vectors, num_hashes, attention_mask, increase_num_buckets=False):
        batch_size = vectors.shape[0]
        rotation_size = self.num_buckets
        num_buckets = self.num_buckets
        vectors = vectors.detach()
        if self.hash_seed is not None:
            torch.manual_seed(self.hash_seed)
        rotations_shape = (self.num_attention_heads, vectors.shape[-1], num_hashes, rotation_size // 2)
        random_rotations = torch.randn(rotations_shape, device=vectors.device, dtype=vectors.dtype)
        rotated_vectors = torch.einsum("bmtd,mdhr->bmhtr", vectors, random_rotations)
        rotated_vectors = torch.cat([rotated_vectors, -rotated_vectors], dim=-1)
        buckets = torch.argmax(rotated_vectors, dim=-1)

        if attention_mask is not None and (attention_mask.sum().item() < batch_size * attention_mask.shape[-1]):
            # add an extra bucket for padding tokens only
            num_buckets = num_buckets + 1
            # assign padding tokens extra bucket
            buckets_mask = attention_mask.to(torch.bool)[:, None, None, :].expand(buckets.shape)
            buckets = torch.where(
                buckets_mask, buckets, torch.tensor(num_buckets - 1, dtype=torch.long, device=buckets.device)
            )
        elif increase_num_buckets:
            num_buckets = num_buckets + 1

        offsets = torch.arange(num_hashes, device=vectors.device)
        offsets = (offsets * num_buckets).view((1, 1, -1, 1))
        offsets = offsets.expand((batch_size, self.num_attention_heads) + offsets.shape[-2:])
        offset_buckets = (buckets + offsets).flatten(start_dim=2, end_dim=3)
        return offset_buckets

    def forward(self, hidden_states, attention_mask=None, num_hashes=1):
        query_key_vectors = self.query_key(hidden_states).unsqueeze(1)
        buckets = self._hash_vectors(query_key_vectors, num_hashes, attention_mask)
        return query_key_vectors, buckets


def train_loop(layer, data):
    layer.train()
    fast = torch.compile(layer)
    for hidden, mask in data:
        qk, _ = fast(hidden, mask)
        qk.sum().backward()


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 4)
    full = torch.ones(2, 6, dtype=torch.long)
    padded = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    return LSHSelfAttention().train(), [(x, full), (x, padded), (x,)]
