"""DeBERTa-v2 relative positions: make_log_bucket_position with torch.where/sign/log, gated on bucket settings (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/deberta_v2/modeling_deberta_v2.py:56-100
Kept: make_log_bucket_position, build_relative_position (arange ids, the
`bucket_size > 0 and max_position > 0` gate, long cast, slicing, unsqueeze),
and a relative-embedding lookup via the bucketed ids.
Simplified: one embedding table; bucket 4, max position 16.
"""
import torch
from torch import nn


def make_log_bucket_position(relative_pos, bucket_size: int, max_position: int):
    sign = torch.sign(relative_pos)
    mid = bucket_size // 2
    abs_pos = torch.where(
        (relative_pos < mid) & (relative_pos > -mid),
        torch.tensor(mid - 1).type_as(relative_pos),
        torch.abs(relative_pos),
    )
    log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid)) * (mid - 1)) + mid
    bucket_pos = torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign)
    return bucket_pos


def build_relative_position(query_layer, key_layer, bucket_size: int = -1, max_position: int = -1):
    query_size = query_layer.size(-2)
    key_size = key_layer.size(-2)
    q_ids = torch.arange(query_size, dtype=torch.long, device=query_layer.device)
    k_ids = torch.arange(key_size, dtype=torch.long, device=key_layer.device)
    rel_pos_ids = q_ids[:, None] - k_ids[None, :]
    if bucket_size > 0 and max_position > 0:
        rel_pos_ids = make_log_bucket_position(rel_pos_ids, bucket_size, max_position)
    rel_pos_ids = rel_pos_ids.to(torch.long)
    rel_pos_ids = rel_pos_ids[:query_size, :]
    rel_pos_ids = rel_pos_ids.unsqueeze(0)
    return rel_pos_ids


class DisentangledSelfAttention(nn.Module):
    def __init__(self, position_buckets=4, max_relative_positions=16):
        super().__init__()
        self.position_buckets = position_buckets
        self.max_relative_positions = max_relative_positions
        self.rel_embeddings = nn.Embedding(2 * position_buckets, 4)

    def forward(self, query_layer, key_layer):
        relative_pos = build_relative_position(query_layer, key_layer, bucket_size=self.position_buckets, max_position=self.max_relative_positions)
        idx = torch.clamp(relative_pos + self.position_buckets, 0, 2 * self.position_buckets - 1)
        return query_layer @ key_layer.transpose(-1, -2) + self.rel_embeddings(idx).sum(-1)


model = DisentangledSelfAttention()
model = torch.compile(model, backend="aot_eager")


def make():
    torch.manual_seed(0)
    return DisentangledSelfAttention(), [(torch.randn(1, 10, 4), torch.randn(1, 10, 4))]
