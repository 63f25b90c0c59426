"""Zoology Based linear attention: `init_feature_map` picks `TaylorExp` by name from a kwargs dict, whose forward concatenates `torch.ones(x[..., :1].shape).to(x.device)` with first- and second-order terms, then causal cumulative-sum attention.

Source: HazyResearch/zoology@0a9c68217c6454c9a0e4ffefddc852c7238bea7b:zoology/mixers/based.py:1-136
Kept: init_feature_map, FeatureMap, TaylorExp.forward and Based verbatim (the
feature_map_kwargs plumbing, causal and non-causal branches).
Simplified: einops `rearrange(y, 'b h l d -> b l (h d)')` is written as
transpose/reshape; TaylorExp.forward_mem_save (opt_einsum) is left out; d_model 16,
feature_dim 4, 2 heads, sequence 6.
"""
import math

import torch
import torch.nn as nn


def init_feature_map(feature_map: str = 'none', **kwargs: any):
    """
    Initialize query and key mapping for linear attention
    """
    if feature_map in [None, 'none', 'identity']:
        return FeatureMap(**kwargs)
    # Taylor series approximations to exp(x)
    elif feature_map == 'taylor_exp':
        return TaylorExp(**kwargs)
    else:
        raise NotImplementedError(f'Sorry "{feature_map}" feature map not implemented.')


class FeatureMap(nn.Module):
    """
    Parent feature map; default is identity function
    """
    def __init__(self,
                 input_dim: int,
                 temp: int = None,
                 head_dim_idx: int = -1,
                 eps: float = 1e-12,
                 **kwargs: any):
        super().__init__()
        self.input_dim = input_dim
        self.head_dim_idx = head_dim_idx
        self.temp = 1. if temp is None else temp
        self.eps = eps

    def forward(self, x: torch.Tensor):
        """
        Assume x.shape is (batch_size, n_heads, seq_len, head_dim)
        """
        return x


class TaylorExp(FeatureMap):
    """
    Feature map to compute 2nd-order Taylor approx. of exp(q^T k / sqrt(d))
    """
    def __init__(self, input_dim: int, **kwargs: any):
        super().__init__(input_dim, **kwargs)
        self.r2 = math.sqrt(2)
        self.rd = math.sqrt(self.input_dim)
        self.rrd = math.sqrt(self.rd)
        self.tril_indices = torch.tril_indices(self.input_dim, self.input_dim, -1)

    # Running these in parallel
    def forward(self, x: torch.Tensor):
        # Get 2nd-order terms (rearrange(x * x), '... m n -> ... (m n)')
        x2 = (x.unsqueeze(-1) * x.unsqueeze(-2)).flatten(start_dim=-2) / self.r2
        return torch.cat([torch.ones(x[..., :1].shape).to(x.device),
                          x / self.rrd, x2 / self.rd], dim=self.head_dim_idx)


class Based(nn.Module):
    def __init__(
        self,
        d_model: int,
        l_max: int = 2048,
        feature_dim: int = 16,
        num_key_value_heads: int = 12,
        num_heads: int = 12,
        feature_name: "str" = "taylor_exp",
        eps: float = 1e-12,
        causal: bool = True,
        **kwargs
    ):
        super().__init__()
        self.d_model = d_model
        self.l_max = l_max

        # linear attention
        self.feature_name = feature_name
        self.feature_dim = feature_dim
        self.num_key_value_heads = num_key_value_heads
        self.num_heads = num_heads
        self.head_dim = self.d_model // self.num_key_value_heads
        self.causal = causal
        feature_map_kwargs = {
            'input_dim': self.feature_dim,
            'head_dim_idx': -1,
            'temp': 1.,
            'eps': 1e-12
        }
        self.feature_map = init_feature_map(feature_map=self.feature_name, **feature_map_kwargs)
        self.proj_q = nn.Linear(self.d_model, self.feature_dim * self.num_heads, bias=False)
        self.proj_k = nn.Linear(self.d_model, self.feature_dim * self.num_heads, bias=False)
        self.proj_v = nn.Linear(self.d_model, self.num_key_value_heads * self.head_dim, bias=False)
        self.proj_o = nn.Linear(self.num_heads * self.head_dim, self.d_model, bias=False)
        self.dropout = nn.Identity()
        self.eps = eps

    def forward(self, hidden_states: torch.Tensor, filters: torch.Tensor = None, *args, **kwargs):
        """
        x (torch.Tensor): tensor of shape (b, d, l)
        y (torch.Tensor): tensor of shape (b, d, l)
        """
        # hidden_states = hidden_states.transpose(1, 2)
        b, l, _ = hidden_states.size()
        q, k, v = self.proj_q(hidden_states), self.proj_k(hidden_states), self.proj_v(hidden_states)

        q = q.view(b, l, self.num_heads, self.feature_dim).transpose(1, 2)
        k = k.view(b, l, self.num_key_value_heads, self.feature_dim).transpose(1, 2)
        v = v.view(b, l, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        # Linear attention
        q, k = self.feature_map(q), self.feature_map(k)
        q, k, v = q.unsqueeze(-2), k.unsqueeze(-2), v.unsqueeze(-1)

        # Compute attention
        if self.causal:
            y = ((q * (k * v).cumsum(dim=2)).sum(dim=-1) /
                 ((q * k.cumsum(dim=2)).sum(dim=-1) + self.eps))
        else:
            y = ((q * (k * v).sum(dim=2, keepdim=True)).sum(dim=-1) /
                 ((q * k.sum(dim=2, keepdim=True)).sum(dim=-1) + self.eps))
        bh, h, lh, dh = y.shape
        y = y.transpose(1, 2).reshape(bh, lh, h * dh)
        y = self.proj_o(y.to(hidden_states.dtype))
        y = self.dropout(y)
        return y.to(hidden_states.dtype)


def build_mixer(causal=True):
    return Based(d_model=16, l_max=32, feature_dim=4, num_key_value_heads=2, num_heads=2, causal=causal)


mixer = torch.compile(build_mixer())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16)
    return build_mixer(), [(x,), (x[:, :3],)]
