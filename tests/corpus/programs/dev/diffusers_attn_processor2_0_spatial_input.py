"""diffusers AttnProcessor2_0 on a spatial (4-D) input: ndim switch, optional norms, prepare_attention_mask, SDPA, residual and rescale (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/attention_processor.py:2700-2787
Kept: AttnProcessor2_0.__call__ verbatim (deprecated scale check, spatial_norm,
the `input_ndim == 4` reshape, mask preparation and view to heads,
group_norm, norm_cross, q/k norms, SDPA, to_out, reshape back,
residual_connection, rescale_output_factor) driven by an Attention-like holder
as the UNet mid-block's attention uses it.
Simplified: deprecate raises; prepare_attention_mask pads/repeats as in
Attention.prepare_attention_mask; channels 4, 2 heads.
"""
import torch
import torch.nn.functional as F
from torch import nn


def deprecate(*args, **kwargs):
    raise TypeError("deprecated argument")


class AttnProcessor2_0:

    def __init__(self):
        pass

    def __call__(self, attn, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor | None=None, attention_mask: torch.Tensor | None=None, temb: torch.Tensor | None=None, *args, **kwargs) -> torch.Tensor:
        if len(args) > 0 or kwargs.get('scale', None) is not None:
            deprecation_message = 'The `scale` argument is deprecated and will be ignored. Please remove it, as passing it will raise an error in the future. `scale` should directly be passed while calling the underlying pipeline component i.e., via `cross_attention_kwargs`.'
            deprecate('scale', '1.0.0', deprecation_message)
        residual = hidden_states
        if attn.spatial_norm is not None:
            hidden_states = attn.spatial_norm(hidden_states, temb)
        input_ndim = hidden_states.ndim
        if input_ndim == 4:
            batch_size, channel, height, width = hidden_states.shape
            hidden_states = hidden_states.view(batch_size, channel, height * width).transpose(1, 2)
        batch_size, sequence_length, _ = hidden_states.shape if encoder_hidden_states is None else encoder_hidden_states.shape
        if attention_mask is not None:
            attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
            attention_mask = attention_mask.view(batch_size, attn.heads, -1, attention_mask.shape[-1])
        if attn.group_norm is not None:
            hidden_states = attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        query = attn.to_q(hidden_states)
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states
        elif attn.norm_cross:
            encoder_hidden_states = attn.norm_encoder_hidden_states(encoder_hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)
        inner_dim = key.shape[-1]
        head_dim = inner_dim // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        if attn.norm_q is not None:
            query = attn.norm_q(query)
        if attn.norm_k is not None:
            key = attn.norm_k(key)
        hidden_states = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, dropout_p=0.0, is_causal=False)
        hidden_states = hidden_states.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
        hidden_states = hidden_states.to(query.dtype)
        hidden_states = attn.to_out[0](hidden_states)
        hidden_states = attn.to_out[1](hidden_states)
        if input_ndim == 4:
            hidden_states = hidden_states.transpose(-1, -2).reshape(batch_size, channel, height, width)
        if attn.residual_connection:
            hidden_states = hidden_states + residual
        hidden_states = hidden_states / attn.rescale_output_factor
        return hidden_states



class Attention(nn.Module):
    def __init__(self, query_dim=4, heads=2):
        super().__init__()
        self.heads = heads
        self.spatial_norm = None
        self.group_norm = nn.GroupNorm(2, query_dim)
        self.norm_cross = False
        self.norm_q = self.norm_k = None
        self.residual_connection = True
        self.rescale_output_factor = 1.0
        self.to_q = nn.Linear(query_dim, query_dim)
        self.to_k = nn.Linear(query_dim, query_dim)
        self.to_v = nn.Linear(query_dim, query_dim)
        self.to_out = nn.ModuleList([nn.Linear(query_dim, query_dim), nn.Dropout(0.0)])
        self.processor = AttnProcessor2_0()

    def prepare_attention_mask(self, attention_mask, target_length, batch_size, out_dim=3):
        current_length = attention_mask.shape[-1]
        if current_length != target_length:
            attention_mask = F.pad(attention_mask, (0, target_length), value=0.0)
        if attention_mask.shape[0] < batch_size * self.heads:
            attention_mask = attention_mask.repeat_interleave(self.heads, dim=0, output_size=attention_mask.shape[0] * self.heads)
        return attention_mask

    def forward(self, hidden_states, encoder_hidden_states=None, attention_mask=None, **cross_attention_kwargs):
        return self.processor(self, hidden_states, encoder_hidden_states=encoder_hidden_states, attention_mask=attention_mask, **cross_attention_kwargs)


mid_attn = torch.compile(Attention())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 3, 3)
    return Attention(), [(x,), (torch.randn(1, 9, 4), None, torch.zeros(1, 1, 9))]
