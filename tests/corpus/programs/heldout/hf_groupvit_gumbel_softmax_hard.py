"""GroupViT assign attention: `gumbel_softmax` samples a `torch.distributions.Gumbel` in training, `hard_softmax` in eval.

Source: huggingface/transformers@v5.23.0:src/transformers/models/groupvit/modeling_groupvit.py:53-83,160-205
Kept: hard_softmax, gumbel_softmax (the `torch.full(())` parameters of the
Gumbel distribution, straight-through hard branch) and GroupViTAssignAttention
verbatim (get_attn's `gumbel and self.training` switch, the soft attention for
the returned map, the assign_eps renormalisation).
Simplified: hidden size 8, 3 group tokens over 10 image tokens; the
surrounding token-assign block (MLP mixer, cross attention) is left out.
"""
import torch
from torch import nn


class GroupViTVisionConfig:
    hidden_size = 8
    assign_eps = 1.0


def hard_softmax(logits: torch.Tensor, dim: int):
    y_soft = logits.softmax(dim)
    # Straight through.
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = torch.zeros_like(logits, memory_format=torch.legacy_contiguous_format).scatter_(dim, index, 1.0)
    ret = y_hard - y_soft.detach() + y_soft

    return ret


def gumbel_softmax(logits: torch.Tensor, tau: float = 1, hard: bool = False, dim: int = -1) -> torch.Tensor:
    # more stable https://github.com/pytorch/pytorch/issues/41663
    gumbel_dist = torch.distributions.gumbel.Gumbel(
        torch.full((), 0.0, device=logits.device, dtype=logits.dtype),
        torch.full((), 1.0, device=logits.device, dtype=logits.dtype),
    )
    gumbels = gumbel_dist.sample(logits.shape)

    gumbels = (logits + gumbels) / tau  # ~Gumbel(logits,tau)
    y_soft = gumbels.softmax(dim)

    if hard:
        # Straight through.
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = torch.zeros_like(logits, memory_format=torch.legacy_contiguous_format).scatter_(dim, index, 1.0)
        ret = y_hard - y_soft.detach() + y_soft
    else:
        # Reparameterization trick.
        ret = y_soft
    return ret


class GroupViTAssignAttention(nn.Module):
    def __init__(self, config: GroupViTVisionConfig):
        super().__init__()
        self.scale = config.hidden_size**-0.5

        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.v_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.assign_eps = config.assign_eps

    def get_attn(self, attn, gumbel=True, hard=True):
        if gumbel and self.training:
            attn = gumbel_softmax(attn, dim=-2, hard=hard)
        else:
            if hard:
                attn = hard_softmax(attn, dim=-2)
            else:
                attn = nn.functional.softmax(attn, dim=-2)

        return attn

    def forward(self, query, key):
        value = key
        # [batch_size, query_length, channels]
        query = self.q_proj(query)

        # [batch_size, key_length, channels]
        key = self.k_proj(key)

        # [batch_size, key_length, channels]
        value = self.v_proj(value)

        # [batch_size, query_length, key_length]
        raw_attn = (query @ key.transpose(-2, -1)) * self.scale

        attn = self.get_attn(raw_attn)
        soft_attn = self.get_attn(raw_attn, gumbel=False, hard=False)

        attn = attn / (attn.sum(dim=-1, keepdim=True) + self.assign_eps)

        out = attn @ value

        out = self.proj(out)

        return out, soft_attn


def build(config=None, training=False):
    attention = GroupViTAssignAttention(config or GroupViTVisionConfig())
    attention.train(training)
    return torch.compile(attention, mode="reduce-overhead")


def make():
    torch.manual_seed(0)
    group_tokens = torch.randn(2, 3, 8)
    image_tokens = torch.randn(2, 10, 8)
    return GroupViTAssignAttention(GroupViTVisionConfig()).eval(), [(group_tokens, image_tokens)]
