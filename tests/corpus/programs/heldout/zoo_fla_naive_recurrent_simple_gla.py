"""flash-linear-attention Simple GLA through its pure-torch reference paths: the layer's mode switch sends short eval inputs to the recurrent form (a per-step state update written into `o[:, :, i]`) and the rest to the chunked form with a padded, tril-masked decay (no data-dependent step).

Source: fla-org/flash-linear-attention@20ceee5295631b9c76e2334c1613fb13576829c9:fla/ops/simple_gla/naive.py:8-89
Also: the layer forward of fla/layers (`mode = 'fused_recurrent' if (q_len <= 64
and not self.training) else self.mode`, and the training-mode assert), e.g.
fla/layers/simple_gla.py.
Kept: naive_chunk_simple_gla and naive_recurrent_simple_gla verbatim
(padding to the chunk size, cumsum decay, intra/inter-chunk terms, optional
initial and final state).
Simplified: einops rearrange is a local helper for the three patterns used;
the Triton chunk / fused_recurrent kernels the layer normally calls are
these naive references; the layer keeps only q/k/v/gate projections and
o_proj; hidden 8, 2 heads, chunk 4, mode switch at 4 tokens.
"""
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


def rearrange(x, pattern, c=None):
    """einops.rearrange for the patterns naive.py uses."""
    if pattern == 'b t h ... -> b h t ...':
        return x.transpose(1, 2)
    if pattern == 'b h (n c) d -> b h n c d':
        return x.reshape(x.shape[0], x.shape[1], x.shape[2] // c, c, x.shape[3])
    if pattern == 'b h n c d -> b (n c) h d':
        b, h, n, cc, d = x.shape
        return x.permute(0, 2, 3, 1, 4).reshape(b, n * cc, h, d)
    raise NotImplementedError(pattern)


def naive_chunk_simple_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    initial_state: Optional[torch.Tensor] = None,
    output_final_state: bool = False,
    chunk_size: int = 64,
    scale: Optional[float] = None,
):
    q, k, v, g = (rearrange(x, 'b t h ... -> b h t ...').to(torch.float32) for x in [q, k, v, g])
    if scale is None:
        scale = 1.0 / q.shape[-1] ** 0.5

    T = q.shape[-2]
    BT = chunk_size
    pad_len = (BT - (T % BT)) % BT
    if pad_len > 0:
        # Pad all tensors
        q = F.pad(q, (0, 0, 0, pad_len))
        k = F.pad(k, (0, 0, 0, pad_len))
        v = F.pad(v, (0, 0, 0, pad_len))
        g = F.pad(g, (0, pad_len))
    decay = g
    B, H, T1, K = q.shape
    V = v.shape[-1]
    q = q * scale
    q, k, v, decay = (rearrange(x, 'b h (n c) d -> b h n c d', c=chunk_size) for x in [q, k, v, decay.unsqueeze(-1)])
    decay = decay.squeeze(-1).cumsum(-1)
    L_mask = ((decay.unsqueeze(-1) - decay.unsqueeze(-2)).tril().exp().float()).tril()
    S = k.new_zeros(B, H, K, V)
    if initial_state is not None:
        S = initial_state
    o = torch.zeros_like(v)
    for i in range(0, T1 // chunk_size):
        q_i, k_i, v_i = q[:, :, i], k[:, :, i], v[:, :, i]
        attn = (q_i @ k_i.transpose(-1, -2) * L_mask[:, :, i])
        o_inter = (q_i * decay[:, :, i, :, None].exp()) @ S
        o[:, :, i] = o_inter + attn @ v_i
        S = S * decay[:, :, i, -1, None, None].exp() + \
            (k_i * (decay[:, :, i, -1, None] - decay[:, :, i]).exp()[..., None]).transpose(-1, -2) @ v_i
    if not output_final_state:
        S = None
    # unpad
    o = rearrange(o, 'b h n c d -> b (n c) h d')[:, :T]
    return o, S


def naive_recurrent_simple_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    scale: Optional[float] = None,
    initial_state: Optional[torch.Tensor] = None,
    output_final_state: bool = True,
):
    dtype = q.dtype
    q, k, v, g = (x.transpose(1, 2).float() for x in (q, k, v, g))
    B, H, T, K = q.shape
    V = v.shape[-1]
    if scale is None:
        scale = K ** -0.5
    q = q * scale
    o = v.new_zeros(B, H, T, V)

    S = q.new_zeros(B, H, K, V)
    if initial_state is not None:
        S += initial_state

    for i in range(T):
        gate = g[:, :, i].exp()
        key = k[:, :, i]
        value = v[:, :, i]
        kv = key.unsqueeze(-1) * value.unsqueeze(-2)
        S = S * gate.unsqueeze(-1).unsqueeze(-1) + kv
        q_i = q[:, :, i, :]
        o_i = (q_i.unsqueeze(-1) * S).sum(-2)
        o[:, :, i] = o_i
    if not output_final_state:
        S = None
    return o.transpose(1, 2).to(dtype), S


class SimpleGatedLinearAttention(nn.Module):
    def __init__(self, mode: str = 'chunk', hidden_size: int = 8, num_heads: int = 2,
                 chunk_size: int = 4, recurrent_threshold: int = 4):
        super().__init__()
        self.mode = mode
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.chunk_size = chunk_size
        self.recurrent_threshold = recurrent_threshold
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.gk_proj = nn.Linear(hidden_size, num_heads)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states: torch.Tensor, initial_state: Optional[torch.Tensor] = None,
                use_cache: bool = False):
        batch_size, q_len, _ = hidden_states.shape
        # change to inference mode.
        mode = 'fused_recurrent' if (q_len <= self.recurrent_threshold and not self.training) else self.mode
        if self.training:
            assert mode == 'chunk', "Only chunk mode is supported in training."

        q = self.q_proj(hidden_states).view(batch_size, q_len, self.num_heads, self.head_dim)
        k = self.k_proj(hidden_states).view(batch_size, q_len, self.num_heads, self.head_dim)
        v = self.v_proj(hidden_states).view(batch_size, q_len, self.num_heads, self.head_dim)
        gk = F.logsigmoid(self.gk_proj(hidden_states)) / 16

        if mode == 'chunk':
            o, recurrent_state = naive_chunk_simple_gla(
                q, k, v, gk, initial_state=initial_state, output_final_state=use_cache,
                chunk_size=self.chunk_size,
            )
        elif mode == 'fused_recurrent':
            o, recurrent_state = naive_recurrent_simple_gla(
                q, k, v, gk, initial_state=initial_state, output_final_state=use_cache,
            )
        else:
            raise NotImplementedError(f"Not supported mode `{mode}`.")

        o = self.o_proj(o.reshape(batch_size, q_len, -1))
        return o, recurrent_state


def make():
    torch.manual_seed(0)
    layer = SimpleGatedLinearAttention().eval()
    long_x = torch.randn(2, 6, 8)
    short_x = torch.randn(2, 3, 8)
    state = torch.randn(2, 2, 4, 4) * 0.1
    return layer, [(long_x,), (short_x, state, True), (long_x, state, True)]


def build_layer():
    return torch.compile(SimpleGatedLinearAttention().eval())
