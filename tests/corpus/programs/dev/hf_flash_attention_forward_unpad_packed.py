"""transformers _flash_attention_forward: unpad by attention_mask (nonzero, max().item()) or detect packed sequences from position_ids (`if _is_packed_sequence(...)` on a tensor).

Source: huggingface/transformers@v5.23.0:src/transformers/modeling_flash_attention_utils.py:315-580,745-867
Kept: _index_first_axis, _unpad_input, _pad_input, _get_unpad_data, _upad_input
(its three query_length branches), prepare_fa_kwargs_from_position_ids,
_prepare_from_posids, _is_packed_sequence and the body of
_flash_attention_forward from the attention_mask branch on, verbatim.
Simplified: the flash kernels are emulated with SDPA: flash_fn is causal SDPA,
flash_varlen_fn builds a block-diagonal causal mask from cu_seqlens with
searchsorted; the kwargs-processing partial is dropped; no paged path.
"""
import torch
import torch.nn.functional as F
from torch import nn


def _index_first_axis(tensor, indices):
    reshaped_tensor = tensor.reshape(-1, *tensor.shape[2:])
    return reshaped_tensor[indices]


def _unpad_input(hidden_states, attention_mask, unused_mask=None):
    all_masks = (attention_mask + unused_mask) if unused_mask is not None else attention_mask
    seqlens_in_batch = all_masks.sum(dim=-1, dtype=torch.int32)
    used_seqlens_in_batch = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(all_masks.flatten(), as_tuple=False).flatten()
    # using .item() here is required to prevent a performance regression (#46693)
    max_seqlen_in_batch = seqlens_in_batch.max().item()
    cu_seqlens = F.pad(torch.cumsum(seqlens_in_batch, dim=0, dtype=torch.int32), (1, 0))

    return (
        _index_first_axis(hidden_states, indices),
        indices,
        cu_seqlens,
        max_seqlen_in_batch,
        used_seqlens_in_batch,
    )


def _pad_input(hidden_states, indices, batch, seqlen):
    dim = hidden_states.shape[1:]
    output = torch.zeros((batch * seqlen), *dim, device=hidden_states.device, dtype=hidden_states.dtype)
    output[indices] = hidden_states
    return output.view(batch, seqlen, *dim)


def _get_unpad_data(attention_mask):
    seqlens_in_batch = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(attention_mask.flatten(), as_tuple=False).flatten()
    # using .item() here is required to prevent a performance regression (#46693)
    max_seqlen_in_batch = seqlens_in_batch.max().item()
    cu_seqlens = F.pad(torch.cumsum(seqlens_in_batch, dim=0, dtype=torch.int32), (1, 0))
    return (
        indices,
        cu_seqlens,
        max_seqlen_in_batch,
    )


def _upad_input(query_layer, key_layer, value_layer, attention_mask, query_length, unpad_input_func):
    indices_k, cu_seqlens_k, max_seqlen_in_batch_k = _get_unpad_data(attention_mask)

    if key_layer.shape[1] > (seq_len := attention_mask.shape[-1]):
        key_layer, value_layer = key_layer[:, :seq_len, :, :], value_layer[:, :seq_len, :, :]

    batch_size, kv_seq_len, num_key_value_heads, head_dim = key_layer.shape

    key_layer = _index_first_axis(key_layer, indices_k)
    value_layer = _index_first_axis(value_layer, indices_k)
    if query_length == kv_seq_len:
        query_layer = _index_first_axis(query_layer, indices_k)
        cu_seqlens_q = cu_seqlens_k
        max_seqlen_in_batch_q = max_seqlen_in_batch_k
        indices_q = indices_k
    elif query_length == 1:
        max_seqlen_in_batch_q = 1
        cu_seqlens_q = torch.arange(
            batch_size + 1, dtype=torch.int32, device=query_layer.device
        )  # There is a memcpy here, that is very bad.
        indices_q = cu_seqlens_q[:-1]
        query_layer = query_layer.squeeze(1)
    else:
        # The -q_len: slice assumes left padding.
        attention_mask = attention_mask[:, -query_length:]
        query_layer, indices_q, cu_seqlens_q, max_seqlen_in_batch_q, *_ = unpad_input_func(query_layer, attention_mask)

    return (
        query_layer,
        key_layer,
        value_layer,
        indices_q,
        (cu_seqlens_q, cu_seqlens_k),
        (max_seqlen_in_batch_q, max_seqlen_in_batch_k),
    )


def prepare_fa_kwargs_from_position_ids(position_ids):
    tensor_kwargs = {"dtype": torch.int32, "device": position_ids.device}

    position_ids = position_ids.reshape(-1)
    indices_q = (position_ids == position_ids.min()).nonzero().view(-1)

    cu_seq_lens_q = torch.cat(
        (
            indices_q.to(**tensor_kwargs),
            torch.tensor(position_ids.size(), **tensor_kwargs),
        )
    )
    cu_seq_lens_k = cu_seq_lens_q
    max_length_q = cu_seq_lens_q.diff().max()
    max_length_k = max_length_q

    return (cu_seq_lens_q, cu_seq_lens_k), (max_length_q, max_length_k)


def _prepare_from_posids(query, key, value, position_ids):
    query = query.contiguous().view(-1, query.size(-2), query.size(-1))
    key = key.contiguous().view(-1, key.size(-2), key.size(-1))
    value = value.contiguous().view(-1, value.size(-2), value.size(-1))
    (cu_seq_lens_q, cu_seq_lens_k), (max_length_q, max_length_k) = prepare_fa_kwargs_from_position_ids(position_ids)
    return (query, key, value, (cu_seq_lens_q, cu_seq_lens_k), (max_length_q, max_length_k))


def _is_packed_sequence(position_ids, batch_size):
    if position_ids is None or batch_size != 1 or position_ids.shape[-1] == 1:
        return False

    increasing_position_sequences = (
        torch.arange(position_ids.shape[1], device=position_ids.device) + position_ids.min()
    )
    return (increasing_position_sequences - position_ids).abs().sum().bool()


def flash_fn(q, k, v):
    # (batch, seq, heads, dim) layout like flash-attn
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    return out.transpose(1, 2)


def flash_varlen_fn(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None):
    pos_q = torch.arange(q.shape[0], device=q.device)
    pos_k = torch.arange(k.shape[0], device=k.device)
    seg_q = torch.searchsorted(cu_seqlens_q[1:].long(), pos_q, right=True)
    seg_k = torch.searchsorted(cu_seqlens_k[1:].long(), pos_k, right=True)
    mask = (seg_q[:, None] == seg_k[None, :]) & (pos_k[None, :] <= pos_q[:, None] + (k.shape[0] - q.shape[0]))
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], attn_mask=mask
    )
    return out[0].transpose(0, 1)


def _flash_attention_forward(query_states, key_states, value_states, attention_mask, query_length, is_causal=True, position_ids=None):
    batch_size = query_states.size(0)
    unpad_fn = _unpad_input
    pad_fn = _pad_input
    # Contains at least one padding token in the sequence: unpad compute cu_seqlen and max_length from attention mask
    if attention_mask is not None:
        q, k, v, indices_q, (cu_seq_lens_q, cu_seq_lens_k), (max_length_q, max_length_k) = _upad_input(
            query_states, key_states, value_states, attention_mask, query_length, unpad_fn
        )
        out = flash_varlen_fn(q, k, v, cu_seqlens_q=cu_seq_lens_q, cu_seqlens_k=cu_seq_lens_k, max_seqlen_q=max_length_q, max_seqlen_k=max_length_k)
        out = out[0] if isinstance(out, tuple) else out
        return pad_fn(out, indices_q, batch_size, query_length)

    # Padding free, but cu_seqlens or max_seqlen are not provided: infer them from position_ids if sequence lengths vary
    if _is_packed_sequence(position_ids, batch_size):  # this check is expensive so not precomputed
        q, k, v, (cu_seq_lens_q, cu_seq_lens_k), (max_length_q, max_length_k) = _prepare_from_posids(
            query_states, key_states, value_states, position_ids
        )
        out = flash_varlen_fn(q, k, v, cu_seqlens_q=cu_seq_lens_q, cu_seqlens_k=cu_seq_lens_k, max_seqlen_q=max_length_q, max_seqlen_k=max_length_k)
        out = out[0] if isinstance(out, tuple) else out
        return out.view(batch_size, -1, *out.shape[-2:])

    # Padding free and same sequence lengths: we can run flash (no varlen)
    out = flash_fn(query_states, key_states, value_states)
    return out[0] if isinstance(out, tuple) else out


class FlashAttention2(nn.Module):
    def __init__(self, hidden_size=8, num_heads=2):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.o_proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, attention_mask=None, position_ids=None):
        bsz, q_len, _ = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(bsz, q_len, 3, self.num_heads, self.head_dim).unbind(2)
        attn_output = _flash_attention_forward(q, k, v, attention_mask, q_len, position_ids=position_ids)
        return self.o_proj(attn_output.reshape(bsz, q_len, -1))


model = FlashAttention2()
model = torch.compile(model)


def make():
    torch.manual_seed(0)
    m = FlashAttention2()
    x2 = torch.randn(2, 5, 8)
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    x1 = torch.randn(1, 6, 8)
    packed = torch.tensor([[0, 1, 2, 0, 1, 2]])
    plain = torch.arange(6)[None]
    return m, [(x2, mask, None), (x1, None, packed), (x1, None, plain)]
