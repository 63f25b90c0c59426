"""Pegasus encoder: frozen numpy-built sinusoidal position embedding with a no_grad forward, bidirectional padding mask, LayerDrop via torch.rand, fp16 clamp.

Source: huggingface/transformers@v5.23.0:src/transformers/models/pegasus/modeling_pegasus.py:74-136,138-310,425-543
Kept: PegasusSinusoidalPositionalEmbedding verbatim (nn.Embedding subclass with _freeze=True,
numpy create_weight, @torch.no_grad forward over input_ids_shape), eager_attention_forward,
PegasusAttention's self-attention path with the interface lookup, PegasusEncoderLayer (pre-norm,
functional dropouts, fp16 clamp), PegasusEncoder.forward verbatim (xor ValueError, embed_scale,
LayerDrop with `torch.rand([])`, final layer norm).
Simplified: the cache branches of the attention are dropped (encoder only);
create_bidirectional_mask is a local stand-in building the eager additive 4D mask; the weight
copy that post_init does is done in __init__; no output capturing; d_model 8, 2 heads, 2 layers.
"""
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


class PegasusConfig:
    vocab_size = 20
    max_position_embeddings = 16
    d_model = 8
    encoder_layers = 2
    encoder_ffn_dim = 16
    encoder_attention_heads = 2
    encoder_layerdrop = 0.1
    dropout = 0.1
    attention_dropout = 0.0
    activation_dropout = 0.0
    activation_function = "gelu"
    scale_embedding = True
    pad_token_id = 0
    _attn_implementation = "eager"


@dataclass
class BaseModelOutput:
    last_hidden_state: torch.Tensor = None
    hidden_states: tuple = None
    attentions: tuple = None


def create_bidirectional_mask(config, inputs_embeds, attention_mask):
    if attention_mask is None:
        return None
    dtype = inputs_embeds.dtype
    expanded = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - expanded) * torch.finfo(dtype).min


class AttentionInterface:
    _global_mapping = {}

    def get_interface(self, attn_implementation, default):
        if attn_implementation == "eager" or attn_implementation is None:
            return default
        return self._global_mapping[attn_implementation]


ALL_ATTENTION_FUNCTIONS = AttentionInterface()


class PegasusSinusoidalPositionalEmbedding(nn.Embedding):
    """This module produces sinusoidal positional embeddings of any length."""

    def __init__(self, num_positions: int, embedding_dim: int, padding_idx=None) -> None:
        super().__init__(num_positions, embedding_dim, _freeze=True)

    def create_weight(self):
        n_pos, dim = self.weight.shape
        position_enc = np.array(
            [[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)]
        )
        out = torch.empty(n_pos, dim, dtype=self.weight.dtype, requires_grad=False)
        sentinel = dim // 2 if dim % 2 == 0 else (dim // 2) + 1
        out[:, 0:sentinel] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
        out[:, sentinel:] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
        return out

    @torch.no_grad()
    def forward(self, input_ids_shape, past_key_values_length: int = 0, position_ids=None) -> torch.Tensor:
        """`input_ids_shape` is expected to be [bsz x seqlen]."""
        if position_ids is None:
            bsz, seq_len = input_ids_shape[:2]
            position_ids = torch.arange(
                past_key_values_length, past_key_values_length + seq_len, dtype=torch.long, device=self.weight.device
            )
        return super().forward(position_ids)


def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    if scaling is None:
        scaling = query.size(-1) ** -0.5

    # Take the dot product between "query" and "key" to get the raw attention scores.
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling

    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)

    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2).contiguous()

    return attn_output, attn_weights


class PegasusAttention(nn.Module):
    """Multi-headed attention from 'Attention Is All You Need' paper"""

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        is_decoder=False,
        bias=True,
        is_causal=False,
        config=None,
        layer_idx=None,
    ):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = embed_dim // num_heads
        self.config = config

        if (self.head_dim * num_heads) != self.embed_dim:
            raise ValueError(
                f"embed_dim must be divisible by num_heads (got `embed_dim`: {self.embed_dim}"
                f" and `num_heads`: {num_heads})."
            )
        self.scaling = self.head_dim**-0.5
        self.is_decoder = is_decoder
        self.is_causal = is_causal
        self.layer_idx = layer_idx

        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, hidden_states, key_value_states=None, past_key_values=None, attention_mask=None, **kwargs):
        """Input shape: Batch x Time x Channel"""

        # if key_value_states are provided this layer is used as a cross-attention layer
        # for the decoder
        is_cross_attention = key_value_states is not None

        # determine input shapes
        input_shape = hidden_states.shape[:-1]

        hidden_shape = (*input_shape, -1, self.head_dim)

        # get query proj
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        current_states = key_value_states if is_cross_attention else hidden_states
        key_states = self.k_proj(current_states)
        value_states = self.v_proj(current_states)
        kv_shape = (*current_states.shape[:-1], -1, self.head_dim)
        key_states = key_states.view(kv_shape).transpose(1, 2)
        value_states = value_states.view(kv_shape).transpose(1, 2)

        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, eager_attention_forward
        )

        attn_output, attn_weights = attention_interface(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            dropout=0.0 if not self.training else self.dropout,
            scaling=self.scaling,
            **kwargs,
        )

        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.out_proj(attn_output)

        return attn_output, attn_weights


class PegasusEncoderLayer(nn.Module):
    def __init__(self, config: PegasusConfig):
        super().__init__()
        self.embed_dim = config.d_model

        self.self_attn = PegasusAttention(
            embed_dim=self.embed_dim,
            num_heads=config.encoder_attention_heads,
            dropout=config.attention_dropout,
            config=config,
        )
        self.self_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.dropout = config.dropout
        self.activation_fn = nn.GELU()
        self.activation_dropout = config.activation_dropout
        self.fc1 = nn.Linear(self.embed_dim, config.encoder_ffn_dim)
        self.fc2 = nn.Linear(config.encoder_ffn_dim, self.embed_dim)
        self.final_layer_norm = nn.LayerNorm(self.embed_dim)

    def forward(self, hidden_states, attention_mask, **kwargs):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, _ = self.self_attn(
            hidden_states=hidden_states,
            attention_mask=attention_mask,
            **kwargs,
        )
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = nn.functional.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states

        if hidden_states.dtype == torch.float16:
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)

        return hidden_states


class PegasusEncoder(nn.Module):
    def __init__(self, config: PegasusConfig):
        super().__init__()
        self.config = config

        self.dropout = config.dropout
        self.layerdrop = config.encoder_layerdrop

        embed_dim = config.d_model
        self.padding_idx = config.pad_token_id
        self.max_source_positions = config.max_position_embeddings
        self.embed_scale = math.sqrt(embed_dim) if config.scale_embedding else 1.0

        self.embed_tokens = nn.Embedding(config.vocab_size, embed_dim, self.padding_idx)

        self.embed_positions = PegasusSinusoidalPositionalEmbedding(
            config.max_position_embeddings,
            embed_dim,
            self.padding_idx,
        )
        with torch.no_grad():
            self.embed_positions.weight.copy_(self.embed_positions.create_weight())
        self.layers = nn.ModuleList([PegasusEncoderLayer(config) for _ in range(config.encoder_layers)])
        self.layer_norm = nn.LayerNorm(config.d_model)

        self.gradient_checkpointing = False

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None, **kwargs):
        if (input_ids is None) ^ (inputs_embeds is not None):
            raise ValueError("You must specify exactly one of input_ids or inputs_embeds")

        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale

        input_shape = inputs_embeds.shape[:-1]
        embed_pos = self.embed_positions(input_shape)

        hidden_states = inputs_embeds + embed_pos

        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)

        attention_mask = create_bidirectional_mask(
            config=self.config,
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
        )

        for idx, encoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://huggingface.co/papers/1909.11556 for description)
            to_drop = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:  # skip the layer
                    to_drop = True

            if not to_drop:
                hidden_states = encoder_layer(
                    hidden_states,
                    attention_mask,
                    **kwargs,
                )

        hidden_states = self.layer_norm(hidden_states)

        return BaseModelOutput(
            last_hidden_state=hidden_states,
        )


def train_encoder(encoder, input_ids, attention_mask):
    encoder.train()
    compiled = torch.compile(encoder)
    out = compiled(input_ids, attention_mask)
    out.last_hidden_state.sum().backward()


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[5, 6, 7, 8, 1], [9, 10, 1, 0, 0]])
    mask = (ids != 0).long()
    embeds = torch.randn(1, 3, 8)
    return PegasusEncoder(PegasusConfig()).train(), [
        (ids,),
        (ids, mask),
        (None, None, embeds),
        (None, None, None),
    ]


RAISING_INPUTS = {3: "ValueError"}
