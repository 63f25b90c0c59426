"""llm-foundry's MPTModel.forward in training: `attention_mask[:, 0].sum() != attention_mask.shape[0]` guards against left padding, a `sequence_id` the config ignores triggers `warnings.warn`, and the torch attention path warns again when a key_padding_mask meets an attn_bias.

Source: mosaicml/llm-foundry@8c8dd48f72168c5d51e2f7b151595892a8fba43d:llmfoundry/models/mpt/modeling_mpt.py:759-990
Also: llmfoundry/models/layers/attention.py:66-257,1041-1092 (_reset_is_causal,
scaled_multihead_dot_product_attention, attn_bias_shape, build_attn_bias),
llmfoundry/models/mpt/modeling_mpt.py:289-313 (gen_sequence_id_info and
_get_attn_mask_in_len_seq_one_hot).
Kept: forward's argument checks (return_dict, output_attentions, the
training-only left-padding and sequence_id checks), the learned positional
embedding with the padding-adjusted `pos`, embedding_fraction, `_attn_bias`
with its lazy `_attn_bias_initialized` state and the masked_fill of the
attention mask, gen_sequence_id_info, the block loop passing attn_bias and
attention_mask down, and the torch attention kernel verbatim (softcapping,
causal mask, key_padding_mask warning).
Simplified: torch attn_impl only (no flash/alibi/rope/kv reuse/GQA), so the
block loop drops the reuse-kv bookkeeping; einops' rearrange is the equivalent
view/permute; MPTBlock is pre-norm attention + GELU MLP; config d_model 8,
2 heads, 2 layers, vocab 16, max_seq_len 8.
"""
import math
import warnings
from typing import Optional, Union

import torch
import torch.nn as nn


class MPTConfig:
    def __init__(self, d_model=8, n_heads=2, n_layers=2, expansion_ratio=2, max_seq_len=8,
                 vocab_size=16, emb_pdrop=0.0, learned_pos_emb=True, embedding_fraction=1.0,
                 attn_config=None, return_dict=True, use_cache=False):
        self.d_model = d_model
        self.n_heads = n_heads
        self.n_layers = n_layers
        self.expansion_ratio = expansion_ratio
        self.max_seq_len = max_seq_len
        self.vocab_size = vocab_size
        self.emb_pdrop = emb_pdrop
        self.learned_pos_emb = learned_pos_emb
        self.embedding_fraction = embedding_fraction
        self.attn_config = attn_config or {
            'attn_impl': 'torch', 'attn_uses_sequence_id': False, 'alibi': False,
            'alibi_bias_max': 8, 'softmax_scale': None, 'attn_pdrop': 0.0,
        }
        self.return_dict = return_dict
        self.use_cache = use_cache


def _reset_is_causal(
    num_query_tokens: int,
    num_key_tokens: int,
    original_is_causal: bool,
) -> bool:
    # disable causal when it is not needed
    # necessary for flash for generation with kv_cache
    if original_is_causal and num_query_tokens != num_key_tokens:
        if num_query_tokens != 1:
            raise NotImplementedError(
                'MPT does not support query and key with different number of tokens, unless number of query tokens is 1.',
            )
        else:
            return False
    return original_is_causal


def scaled_multihead_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    n_heads: int,
    kv_n_heads: int,
    past_key_value=None,
    softmax_scale: Optional[float] = None,
    attn_bias: Optional[torch.Tensor] = None,
    key_padding_mask: Optional[torch.Tensor] = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    training: bool = False,
    needs_weights: bool = False,
    attn_logit_softcapping: Optional[float] = None,
):
    b_, s_, _ = query.shape
    q = query.view(b_, s_, n_heads, -1).permute(0, 2, 1, 3)
    k = key.view(b_, s_, kv_n_heads, -1).permute(0, 2, 3, 1)
    v = value.view(b_, s_, kv_n_heads, -1).permute(0, 2, 1, 3)

    if past_key_value is not None:
        if len(past_key_value) != 0:
            k = torch.cat([past_key_value[0], k], dim=3)
            v = torch.cat([past_key_value[1], v], dim=2)

        past_key_value = (k, v)

    b, _, s_q, d = q.shape
    s_k = k.size(-1)

    if softmax_scale is None:
        softmax_scale = 1 / math.sqrt(d)

    attn_weight = q.matmul(k) * softmax_scale

    if attn_logit_softcapping is not None:
        attn_weight = attn_logit_softcapping * torch.tanh(
            attn_weight / attn_logit_softcapping,
        )

    if attn_bias is not None:
        # clamp to 0 necessary for torch 2.0 compile()
        _s_q = max(0, attn_bias.size(2) - s_q)
        _s_k = max(0, attn_bias.size(3) - s_k)
        attn_bias = attn_bias[:, :, _s_q:, _s_k:]

        if (attn_bias.size(-1) != 1 and attn_bias.size(-1)
            != s_k) or (attn_bias.size(-2) != 1 and attn_bias.size(-2) != s_q):
            raise RuntimeError(
                f'attn_bias (shape: {attn_bias.shape}) is expected to broadcast to shape: {attn_weight.shape}.',
            )
        attn_weight = attn_weight + attn_bias

    min_val = torch.finfo(q.dtype).min

    if key_padding_mask is not None:
        if attn_bias is not None:
            warnings.warn(
                'Propagating key_padding_mask to the attention module ' +\
                'and applying it within the attention module can cause ' +\
                'unnecessary computation/memory usage. Consider integrating ' +\
                'into attn_bias once and passing that to each attention ' +\
                'module instead.',
            )
        attn_weight = attn_weight.masked_fill(
            ~key_padding_mask.view((b, 1, 1, s_k)),
            min_val,
        )

    if is_causal and (not s_q == 1):
        s = max(s_q, s_k)
        causal_mask = attn_weight.new_ones(s, s, dtype=torch.float32)
        causal_mask = causal_mask.tril()
        causal_mask = causal_mask.to(torch.bool)
        causal_mask = ~causal_mask
        causal_mask = causal_mask[-s_q:, -s_k:]
        attn_weight = attn_weight.masked_fill(
            causal_mask.view(1, 1, s_q, s_k),
            min_val,
        )

    attn_weight = torch.softmax(attn_weight, dim=-1)

    if dropout_p:
        attn_weight = torch.nn.functional.dropout(
            attn_weight,
            p=dropout_p,
            training=training,
            inplace=True,
        )

    out = attn_weight.to(v.dtype).matmul(v)
    out = out.permute(0, 2, 1, 3).reshape(b, s_q, -1)

    if needs_weights:
        return out, attn_weight, past_key_value
    return out, None, past_key_value


def attn_bias_shape(attn_impl, n_heads, seq_len, alibi, causal, use_sequence_id):
    if attn_impl == 'flash':
        return None
    elif attn_impl == 'torch':
        if alibi:
            if (not causal) or use_sequence_id:
                return (1, n_heads, seq_len, seq_len)
            return (1, n_heads, 1, seq_len)
        elif use_sequence_id:
            return (1, 1, seq_len, seq_len)
        return None
    else:
        raise ValueError(f'{attn_impl=} is an invalid setting.')


def build_attn_bias(attn_impl, attn_bias, n_heads, seq_len, causal=False, alibi=False,
                    alibi_bias_max=8):
    if attn_impl == 'flash':
        return None
    elif attn_impl == 'torch':
        return attn_bias
    else:
        raise ValueError(f'{attn_impl=} is an invalid setting.')


def _get_attn_mask_in_len_seq_one_hot(sequence_id, S, attn_uses_sequence_id, attn_impl,
                                      attention_mask):
    attention_mask_in_length = None
    sequence_id_one_hot = None
    if (sequence_id
        is not None) and attn_uses_sequence_id and (attn_impl == 'flash'):
        raise NotImplementedError('flash attention is not part of this program')
    return attention_mask_in_length, sequence_id_one_hot


def gen_sequence_id_info(
    sequence_id: Union[None, torch.Tensor],
    S: int,
    attn_uses_sequence_id: bool,
    attn_impl: str,
    attention_mask: Union[torch.Tensor, None],
    device: Union[torch.device, str],
):
    attention_mask_in_length, sequence_id_one_hot = _get_attn_mask_in_len_seq_one_hot(
        sequence_id,
        S,
        attn_uses_sequence_id,
        attn_impl,
        attention_mask,
    )
    if sequence_id_one_hot is not None:
        pos_id_within_seq = sequence_id_one_hot.cumsum(dim=1)
        pos_id_within_seq = sequence_id_one_hot * pos_id_within_seq
        pos_id_within_seq = pos_id_within_seq.sum(dim=-1) - 1
        return attention_mask_in_length, pos_id_within_seq

    return None, torch.arange(S, device=device)[None, :]


class MultiheadAttention(nn.Module):
    def __init__(self, d_model, n_heads, softmax_scale=None, attn_pdrop=0.0):
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.kv_n_heads = n_heads
        self.softmax_scale = softmax_scale
        self.attn_dropout_p = attn_pdrop
        self.Wqkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, past_key_value=None, attn_bias=None, attention_mask=None,
                is_causal=True, needs_weights=False):
        query, key, value = self.Wqkv(x).chunk(3, dim=2)
        key_padding_mask = attention_mask
        context, attn_weights, past_key_value = scaled_multihead_dot_product_attention(
            query,
            key,
            value,
            self.n_heads,
            self.kv_n_heads,
            past_key_value=past_key_value,
            softmax_scale=self.softmax_scale,
            attn_bias=attn_bias,
            key_padding_mask=key_padding_mask,
            is_causal=_reset_is_causal(query.size(1), key.size(1), is_causal),
            dropout_p=self.attn_dropout_p,
            training=self.training,
            needs_weights=needs_weights,
        )
        return self.out_proj(context), attn_weights, past_key_value


class MPTBlock(nn.Module):
    def __init__(self, d_model, n_heads, expansion_ratio, attn_config):
        super().__init__()
        self.norm_1 = nn.LayerNorm(d_model)
        self.attn = MultiheadAttention(d_model, n_heads, attn_config['softmax_scale'],
                                       attn_config['attn_pdrop'])
        self.norm_2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, expansion_ratio * d_model), nn.GELU(),
                                 nn.Linear(expansion_ratio * d_model, d_model))

    def forward(self, x, past_key_value=None, attn_bias=None, attention_mask=None,
                is_causal=True, output_attentions=False, **kwargs):
        a = self.norm_1(x)
        b, attn_weights, past_key_value = self.attn(
            a, past_key_value=past_key_value, attn_bias=attn_bias,
            attention_mask=attention_mask, is_causal=is_causal,
            needs_weights=output_attentions)
        x = x + b
        x = x + self.ffn(self.norm_2(x))
        return x, attn_weights, past_key_value


class MPTModel(nn.Module):
    def __init__(self, config: MPTConfig):
        super().__init__()
        self.config = config
        self.attn_impl = config.attn_config['attn_impl']
        self.alibi = config.attn_config['alibi']
        self.alibi_bias_max = config.attn_config['alibi_bias_max']
        self.attn_uses_sequence_id = config.attn_config['attn_uses_sequence_id']
        self.learned_pos_emb = config.learned_pos_emb
        self.rope = False
        self.embedding_fraction = config.embedding_fraction

        self.wte = nn.Embedding(config.vocab_size, config.d_model)
        if self.learned_pos_emb:
            self.wpe = nn.Embedding(config.max_seq_len, config.d_model)
        self.emb_drop = nn.Dropout(config.emb_pdrop)
        self.blocks = nn.ModuleList([
            MPTBlock(config.d_model, config.n_heads, config.expansion_ratio, config.attn_config)
            for _ in range(config.n_layers)
        ])
        self.norm_f = nn.LayerNorm(config.d_model)

        self.is_causal = True
        self._attn_bias_initialized = False
        self.attn_bias = None
        self.attn_bias_shape = attn_bias_shape(
            self.attn_impl,
            config.n_heads,
            config.max_seq_len,
            self.alibi,
            causal=self.is_causal,
            use_sequence_id=self.attn_uses_sequence_id,
        )

    def get_sequence_length(self, x: torch.Tensor) -> int:
        return x.size(1)

    @torch.no_grad()
    def _attn_bias(
        self,
        device: torch.device,
        dtype: torch.dtype,
        attention_mask: Optional[torch.ByteTensor] = None,
        sequence_id: Optional[torch.LongTensor] = None,
    ):
        if not self._attn_bias_initialized:
            if self.attn_bias_shape:
                self.attn_bias = torch.zeros(
                    self.attn_bias_shape,
                    device=device,
                    dtype=dtype,
                )
                self.attn_bias = build_attn_bias(
                    self.attn_impl,
                    self.attn_bias,
                    self.config.n_heads,
                    self.config.max_seq_len,
                    causal=self.is_causal,
                    alibi=self.alibi,
                    alibi_bias_max=self.alibi_bias_max,
                )
            self._attn_bias_initialized = True

        # flash will incorporate any attention_mask inside the attention module
        if self.attn_impl == 'flash':
            return self.attn_bias, attention_mask

        if self.attn_bias is not None:
            # .to(*args, **kwargs) is a no-op if tensor is already on
            # specified device or of specified dtype
            self.attn_bias = self.attn_bias.to(dtype=dtype, device=device)

        attn_bias = self.attn_bias

        # If using torch, we incorporate attention_mask. This will output
        # None in place of attention_mask since it will not be further needed in the
        # attention modules.
        if attention_mask is not None:
            s_k = attention_mask.shape[-1]
            if attn_bias is None:
                attn_bias = torch.zeros((1, 1, 1, s_k),
                                        device=device,
                                        dtype=dtype)
            else:
                # clamp to 0 necessary for torch 2.0 compile()
                _s_k = max(0, attn_bias.size(-1) - s_k)
                attn_bias = attn_bias[:, :, :, _s_k:]
            min_val = torch.finfo(attn_bias.dtype).min
            attn_bias = attn_bias.masked_fill(
                ~attention_mask.view(-1, 1, 1, s_k),
                min_val,
            )

        return attn_bias, attention_mask

    def forward(
        self,
        input_ids: Optional[torch.LongTensor] = None,
        past_key_values=None,
        attention_mask: Optional[torch.ByteTensor] = None,
        sequence_id: Optional[torch.LongTensor] = None,
        return_dict: Optional[bool] = None,
        output_attentions: Optional[bool] = None,
        output_hidden_states: Optional[bool] = None,
        use_cache: Optional[bool] = None,
        inputs_embeds: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.LongTensor] = None,
    ):
        return_dict = (
            return_dict if return_dict is not None else self.config.return_dict
        )
        use_cache = (
            use_cache if use_cache is not None else self.config.use_cache
        )

        if attention_mask is not None:
            attention_mask = attention_mask.bool()  # type: ignore

        if not return_dict:
            raise NotImplementedError(
                'return_dict False is not implemented yet for MPT',
            )
        if output_attentions:
            if self.attn_impl != 'torch':
                raise NotImplementedError(
                    'output_attentions is not implemented for MPT when using attn_impl `flash`.',
                )

        if (
            self.training and attention_mask is not None and
            attention_mask[:, 0].sum() != attention_mask.shape[0]
        ):
            raise NotImplementedError(
                'MPT does not support training with left padding.',
            )

        if self.training:
            if self.attn_uses_sequence_id and sequence_id is None:
                raise ValueError(
                    'sequence_id is a required argument when MPT is configured with attn_uses_sequence_id=True '
                    + 'and the model is in train mode.',
                )
            elif (
                self.attn_uses_sequence_id is False and sequence_id is not None
            ):
                warnings.warn(
                    'MPT received non-None input for `sequence_id` but is configured with attn_uses_sequence_id=False. '
                    +
                    'This input will be ignored. If you want the model to use `sequence_id`, set attn_uses_sequence_id to True.',
                )

        if input_ids is not None and inputs_embeds is not None:
            raise ValueError(
                'You cannot specify both input_ids and inputs_embeds.',
            )
        elif input_ids is not None:
            bsz = input_ids.size(0)
            x = self.wte(input_ids)
            input_device = input_ids.device
        elif inputs_embeds is not None:
            bsz = inputs_embeds.size(0)
            x = inputs_embeds
            input_device = inputs_embeds.device
        else:
            raise ValueError('You must specify input_ids or inputs_embeds')

        S = self.get_sequence_length(x)

        assert (
            S <= self.config.max_seq_len
        ), f'Cannot forward input with seq_len={S}, this model only supports seq_len<={self.config.max_seq_len}'

        past_position = 0
        if past_key_values is not None:
            if len(past_key_values) != self.config.n_layers:
                raise ValueError(
                    f'past_key_values must provide a past_key_value for each attention '
                    +
                    f'layer in the network ({len(past_key_values)=}; {self.config.n_layers=}).',
                )
            past_position = past_key_values[0][0].size(3)

        if self.learned_pos_emb:
            if S + past_position > self.config.max_seq_len:
                raise ValueError(
                    f'Cannot forward input with past sequence length {past_position} and current sequence length '
                    +
                    f'{S + 1}, this model only supports total sequence length <= {self.config.max_seq_len}.',
                )

            if position_ids is None:
                pos = torch.arange(
                    past_position,
                    S + past_position,
                    dtype=torch.long,
                    device=input_device,
                ).unsqueeze(0)
            else:
                pos = position_ids

            if attention_mask is not None:
                # adjust the position indices to account for padding tokens
                pos = torch.clamp(
                    pos - torch.cumsum((~attention_mask).to(torch.int32),
                                       dim=1)[:, past_position:],
                    min=0,
                )
            x = x + self.wpe(pos)

        if self.embedding_fraction == 1:
            x = self.emb_drop(x)
        else:
            # this implementation is proposed on page 7 of the GLM-130B paper https://arxiv.org/abs/2210.02414
            x_shrunk = (x * self.embedding_fraction
                       ) + (x.detach() * (1 - self.embedding_fraction))
            x = self.emb_drop(x_shrunk)

        attn_bias, attention_mask = self._attn_bias(
            device=x.device,
            dtype=torch.float32,
            attention_mask=attention_mask,
            sequence_id=sequence_id,
        )
        attention_mask_in_length, pos_id_within_seq = gen_sequence_id_info(
            sequence_id=sequence_id,
            S=S,
            attn_uses_sequence_id=self.attn_uses_sequence_id,
            attn_impl=self.attn_impl,
            attention_mask=attention_mask,
            device=x.device,
        )

        presents = () if use_cache else None
        if use_cache and past_key_values is None:
            past_key_values = [() for _ in range(self.config.n_layers)]

        all_hidden_states = () if output_hidden_states else None
        all_self_attns = () if output_attentions else None
        for b_idx, block in enumerate(self.blocks):
            if output_hidden_states:
                assert all_hidden_states is not None  # pyright
                all_hidden_states = all_hidden_states + (x,)
            past_key_value = (
                past_key_values[b_idx] if past_key_values is not None else None
            )
            x, attn_weights, present = block(
                x,
                past_key_value=past_key_value,
                attn_bias=attn_bias,
                attention_mask=attention_mask,
                is_causal=self.is_causal,
                output_attentions=bool(output_attentions),
            )
            if presents is not None:
                presents += (present,)
            if output_attentions:
                assert all_self_attns is not None  # pyright
                all_self_attns = all_self_attns + (attn_weights,)

        x = self.norm_f(x)

        return {
            'last_hidden_state': x,
            'past_key_values': presents,
            'hidden_states': all_hidden_states,
            'attentions': all_self_attns,
        }


def build_mpt():
    return MPTModel(MPTConfig())


def train_main():
    model = build_mpt()
    model.train()
    model = torch.compile(model)
    input_ids = torch.randint(0, 16, (2, 6))
    return model(input_ids, attention_mask=torch.ones(2, 6, dtype=torch.long))


def make():
    torch.manual_seed(0)
    input_ids = torch.randint(0, 16, (2, 6))
    right_padded = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    left_padded = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
    sequence_id = torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0]])
    return build_mpt(), [
        (input_ids,),
        (input_ids, None, right_padded),
        (input_ids, None, right_padded, sequence_id),
        (input_ids, None, left_padded),
    ]


RAISING_INPUTS = {3: "NotImplementedError"}
