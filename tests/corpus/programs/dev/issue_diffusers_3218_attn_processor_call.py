"""diffusers `Attention.forward` delegating to a processor object, `self.processor(self, hidden_states, ...)`,
whose `AttnProcessor2_0.__call__` runs SDPA (the call that broke the graph in 2023; traced by torch 2.13).

Source: https://github.com/huggingface/diffusers/issues/3218 ("call_function UserDefinedObjectVariable(AttnProcessor2_0)")
and huggingface/diffusers@v0.42.1:src/diffusers/models/attention_processor.py:2696-2787 (AttnProcessor2_0)
Kept: AttnProcessor2_0.__init__/__call__ (deprecated scale check, spatial/group norm hooks, 4-d reshape, mask
preparation, q/k/v heads, SDPA, out projection, residual, rescale) and an Attention module that stores the
processor and forwards to it, compiled as `pipe.unet = torch.compile(pipe.unet)` in the report.
Simplified: no spatial/group/qk norms (None), no cross-attention norm; `prepare_attention_mask` repeats per head;
`deprecate` is a no-op.
"""
import torch
import torch.nn.functional as F
from torch import nn


def deprecate(*args, **kwargs):
    pass


class AttnProcessor2_0:
    r"""
    Processor for implementing scaled dot-product attention (enabled by default if you're using PyTorch 2.0).
    """

    def __init__(self):
        if not hasattr(F, "scaled_dot_product_attention"):
            raise ImportError("AttnProcessor2_0 requires PyTorch 2.0, to use it, please upgrade PyTorch to 2.0.")

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, temb=None, *args,
                 **kwargs):
        if len(args) > 0 or kwargs.get("scale", None) is not None:
            deprecation_message = "The `scale` argument is deprecated and will be ignored."
            deprecate("scale", "1.0.0", deprecation_message)

        residual = hidden_states
        if attn.spatial_norm is not None:
            hidden_states = attn.spatial_norm(hidden_states, temb)

        input_ndim = hidden_states.ndim

        if input_ndim == 4:
            batch_size, channel, height, width = hidden_states.shape
            hidden_states = hidden_states.view(batch_size, channel, height * width).transpose(1, 2)

        batch_size, sequence_length, _ = (
            hidden_states.shape if encoder_hidden_states is None else encoder_hidden_states.shape
        )

        if attention_mask is not None:
            attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
            # scaled_dot_product_attention expects attention_mask shape to be
            # (batch, heads, source_length, target_length)
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

        # the output of sdp = (batch, num_heads, seq_len, head_dim)
        hidden_states = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask, dropout_p=0.0, is_causal=False
        )

        hidden_states = hidden_states.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
        hidden_states = hidden_states.to(query.dtype)

        # linear proj
        hidden_states = attn.to_out[0](hidden_states)
        # dropout
        hidden_states = attn.to_out[1](hidden_states)

        if input_ndim == 4:
            hidden_states = hidden_states.transpose(-1, -2).reshape(batch_size, channel, height, width)

        if attn.residual_connection:
            hidden_states = hidden_states + residual

        hidden_states = hidden_states / attn.rescale_output_factor

        return hidden_states


class Attention(nn.Module):
    def __init__(self, query_dim=4, heads=2, dim_head=2, cross_attention_dim=None):
        super().__init__()
        inner_dim = heads * dim_head
        self.heads = heads
        self.spatial_norm = None
        self.group_norm = None
        self.norm_cross = False
        self.norm_q = None
        self.norm_k = None
        self.residual_connection = False
        self.rescale_output_factor = 1.0
        cross_dim = cross_attention_dim if cross_attention_dim is not None else query_dim
        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_k = nn.Linear(cross_dim, inner_dim, bias=False)
        self.to_v = nn.Linear(cross_dim, inner_dim, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(inner_dim, query_dim), nn.Dropout(0.0)])
        self.processor = AttnProcessor2_0()

    def prepare_attention_mask(self, attention_mask, target_length, batch_size, out_dim=3):
        head_size = self.heads
        return attention_mask.repeat_interleave(head_size, dim=0, output_size=attention_mask.shape[0] * head_size)

    def forward(self, hidden_states, encoder_hidden_states=None, attention_mask=None, **cross_attention_kwargs):
        return self.processor(
            self,
            hidden_states,
            encoder_hidden_states=encoder_hidden_states,
            attention_mask=attention_mask,
            **cross_attention_kwargs,
        )


class UNetBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn1 = Attention()
        self.attn2 = Attention(cross_attention_dim=3)

    def forward(self, sample, encoder_hidden_states):
        sample = sample + self.attn1(sample)
        return sample + self.attn2(sample, encoder_hidden_states=encoder_hidden_states)


class Pipe:
    unet = UNetBlock()


pipe = Pipe()
pipe.unet = torch.compile(pipe.unet)


def make():
    torch.manual_seed(0)
    return UNetBlock(), [(torch.randn(1, 4, 2, 2), torch.randn(1, 5, 3))]
