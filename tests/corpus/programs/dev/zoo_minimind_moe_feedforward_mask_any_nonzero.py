"""MiniMind MoE feed-forward: per-expert `if mask.any()` dispatch with `nonzero`/`index_add_`, training aux loss.

Source: jingyaogong/minimind@0074dcfd506e8097f981ebe091235606fa57c03b:model/model_minimind.py:51-155
Kept: MiniMindConfig's MoE fields (num_experts, num_experts_per_tok,
norm_topk_prob, router_aux_loss_coef), FeedForward (gate/up/down with
ACT2FN[hidden_act]), MOEFeedForward.forward as written: softmax gate, topk,
normalised top-k weights, the loop over experts with `if mask.any()`,
`mask.any(dim=-1).nonzero().flatten()`, `topk_weight[mask]`, `index_add_`,
the `elif self.training` zero-grad touch of unused experts, and the aux loss
stored on `self.aux_loss` in training.
Simplified: transformers' PretrainedConfig/ACT2FN replaced by a plain config
class and a one-entry dict; hidden 16, 4 experts of width 32, top-1.
"""
import math
import torch
import torch.nn.functional as F
from torch import nn

ACT2FN = {"silu": nn.SiLU()}


class MiniMindConfig:
    def __init__(self, hidden_size=16, num_hidden_layers=2, use_moe=True, **kwargs):
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.use_moe = use_moe
        self.dropout = kwargs.get("dropout", 0.0)
        self.hidden_act = kwargs.get("hidden_act", 'silu')
        self.intermediate_size = kwargs.get("intermediate_size", math.ceil(hidden_size * math.pi / 64) * 64)
        ### MoE specific configs (ignored if use_moe = False)
        self.num_experts = kwargs.get("num_experts", 4)
        self.num_experts_per_tok = kwargs.get("num_experts_per_tok", 1)
        self.moe_intermediate_size = kwargs.get("moe_intermediate_size", self.intermediate_size)
        self.norm_topk_prob = kwargs.get("norm_topk_prob", True)
        self.router_aux_loss_coef = kwargs.get("router_aux_loss_coef", 5e-4)


class FeedForward(nn.Module):
    def __init__(self, config: MiniMindConfig, intermediate_size: int = None):
        super().__init__()
        intermediate_size = intermediate_size or config.intermediate_size
        self.gate_proj = nn.Linear(config.hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, config.hidden_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, intermediate_size, bias=False)
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class MOEFeedForward(nn.Module):
    def __init__(self, config: MiniMindConfig):
        super().__init__()
        self.config = config
        self.gate = nn.Linear(config.hidden_size, config.num_experts, bias=False)
        self.experts = nn.ModuleList([FeedForward(config, intermediate_size=config.moe_intermediate_size) for _ in range(config.num_experts)])
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x):
        batch_size, seq_len, hidden_dim = x.shape
        x_flat = x.view(-1, hidden_dim)
        scores = F.softmax(self.gate(x_flat), dim=-1)
        topk_weight, topk_idx = torch.topk(scores, k=self.config.num_experts_per_tok, dim=-1, sorted=False)
        if self.config.norm_topk_prob: topk_weight = topk_weight / (topk_weight.sum(dim=-1, keepdim=True) + 1e-20)
        y = torch.zeros_like(x_flat)
        for i, expert in enumerate(self.experts):
            mask = (topk_idx == i)
            if mask.any():
                token_idx = mask.any(dim=-1).nonzero().flatten()
                weight = topk_weight[mask].view(-1, 1)
                y.index_add_(0, token_idx, (expert(x_flat[token_idx]) * weight).to(y.dtype))
            elif self.training:
                y[0, 0] += 0 * sum(p.sum() for p in expert.parameters())
        if self.training and self.config.router_aux_loss_coef > 0:
            load = F.one_hot(topk_idx, self.config.num_experts).float().mean(0)
            self.aux_loss = (load * scores.mean(0)).sum() * self.config.num_experts * self.config.router_aux_loss_coef
        else:
            self.aux_loss = scores.new_zeros(1).squeeze()
        return y.view(batch_size, seq_len, hidden_dim)


def build(config):
    moe = MOEFeedForward(config)
    return torch.compile(moe)


def make():
    torch.manual_seed(0)
    config = MiniMindConfig(hidden_size=16, moe_intermediate_size=32)
    moe = MOEFeedForward(config)
    # many tokens: every expert gets some; one token: three experts stay unused
    many = torch.randn(2, 12, 16)
    one = torch.randn(1, 1, 16)
    return moe, [(many,), (one,)]
