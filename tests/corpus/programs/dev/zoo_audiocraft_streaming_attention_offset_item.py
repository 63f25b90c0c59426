"""audiocraft streaming transformer with RoPE: each attention layer reads `int(self._streaming_state['offset'].item())` to place the rotation of a streamed step.

Source: facebookresearch/audiocraft@896ec7c47f5e5d1e5aa1e4b260c4405328bf009d:audiocraft/modules/transformer.py:26-60,140-460,577-712
Also: audiocraft/modules/rope.py (RotaryEmbedding.get_rotation/rotate/rotate_qk),
audiocraft/modules/streaming.py (StreamingModule, streaming()).
Kept: StreamingMultiheadAttention's custom self-attention path (packed
in_proj, causal `_get_mask` with past keys and past_context, `_apply_rope`,
`_complete_kv` updating past_keys/past_values/offset, the einsum attention),
StreamingTransformer.forward's sin embedding with streamed offsets and
`_apply_layer`, RotaryEmbedding's cached complex rotation.
Simplified: no xformers or memory-efficient path, no xPos, no cross attention,
kv_repeat 1; einops rearranges are view/permute; the layer is a pre-norm
attention + MLP block; d_model 8, 2 heads, past_context 3.
"""
import typing as tp
from contextlib import contextmanager

import torch
import torch.nn as nn
from torch.nn import functional as F

State = tp.Dict[str, torch.Tensor]


class StreamingModule(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self._streaming_state: State = {}
        self._is_streaming = False

    def _apply_named_streaming(self, fn: tp.Any):
        for name, module in self.named_modules():
            if isinstance(module, StreamingModule):
                fn(name, module)

    def _set_streaming(self, streaming: bool):
        def _set_streaming(name, module):
            module._is_streaming = streaming
        self._apply_named_streaming(_set_streaming)

    @contextmanager
    def streaming(self):
        """Context manager to enter streaming mode. Reset streaming state on exit."""
        self._set_streaming(True)
        try:
            yield
        finally:
            self._set_streaming(False)
            self.reset_streaming()

    def reset_streaming(self):
        """Reset the streaming state."""
        def _reset(name: str, module: StreamingModule):
            module._streaming_state.clear()
        self._apply_named_streaming(_reset)


def create_sin_embedding(positions: torch.Tensor, dim: int, max_period: float = 10000,
                         dtype: torch.dtype = torch.float32) -> torch.Tensor:
    # We aim for BTC format
    assert dim % 2 == 0
    half_dim = dim // 2
    positions = positions.to(dtype)
    adim = torch.arange(half_dim, device=positions.device, dtype=dtype).view(1, 1, -1)
    max_period_tensor = torch.full([], max_period, device=positions.device, dtype=dtype)  # avoid sync point
    phase = positions / (max_period_tensor ** (adim / (half_dim - 1)))
    return torch.cat([torch.cos(phase), torch.sin(phase)], dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim: int, max_period: float = 10000.0, xpos: bool = False,
                 scale: float = 1.0, device=None, dtype: torch.dtype = torch.float32):
        super().__init__()
        assert dim % 2 == 0
        self.scale = scale
        assert dtype in [torch.float64, torch.float32]
        self.dtype = dtype

        adim = torch.arange(0, dim, 2, device=device, dtype=dtype)[: (dim // 2)]
        frequencies = 1.0 / (max_period ** (adim / dim))
        self.register_buffer("frequencies", frequencies)
        self.rotation: tp.Optional[torch.Tensor] = None

    def get_rotation(self, start: int, end: int):
        """Create complex rotation tensor, cache values for fast computation."""
        if self.rotation is None or end > self.rotation.shape[0]:
            assert isinstance(self.frequencies, torch.Tensor)  # Satisfy type checker.
            idx = torch.arange(end, device=self.frequencies.device, dtype=self.dtype)
            angles = torch.outer(idx, self.frequencies)
            self.rotation = torch.polar(torch.ones_like(angles), angles)
        return self.rotation[start:end]

    def rotate(self, x: torch.Tensor, start: int = 0, time_dim: int = 1, invert_decay: bool = False):
        """Apply rope rotation to query or key tensor."""
        T = x.shape[time_dim]
        target_shape = [1] * x.dim()
        target_shape[time_dim] = T
        target_shape[-1] = -1
        rotation = self.get_rotation(start, start + T).view(target_shape)
        decay = 1.0

        x_complex = torch.view_as_complex(x.to(self.dtype).reshape(*x.shape[:-1], -1, 2))
        scaled_rotation = (rotation * decay) * self.scale + (1.0 - self.scale)
        x_out = torch.view_as_real(x_complex * scaled_rotation).view_as(x)

        return x_out.type_as(x)

    def rotate_qk(self, query: torch.Tensor, key: torch.Tensor, start: int = 0, time_dim: int = 1):
        query_timesteps = query.shape[time_dim]
        key_timesteps = key.shape[time_dim]
        streaming_offset = key_timesteps - query_timesteps

        query_out = self.rotate(query, start + streaming_offset, time_dim)
        key_out = self.rotate(key, start, time_dim, invert_decay=True)

        return query_out, key_out


class StreamingMultiheadAttention(StreamingModule):
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 causal: bool = False, past_context: tp.Optional[int] = None,
                 rope: tp.Optional[RotaryEmbedding] = None, safe_streaming: bool = True):
        super().__init__()
        if past_context is not None:
            assert causal

        self.embed_dim = embed_dim
        self.causal = causal
        self.past_context = past_context
        self.memory_efficient = False
        self.rope = rope
        self.cross_attention = False
        self.safe_streaming = safe_streaming
        self.num_heads = num_heads
        self.dropout = dropout

        out_dim = 3 * embed_dim
        in_proj = nn.Linear(embed_dim, out_dim, bias=bias)
        # We try to follow the default PyTorch MHA convention, to easily compare results.
        self.in_proj_weight = in_proj.weight
        self.in_proj_bias = in_proj.bias
        if bias:
            self.in_proj_bias.data.zero_()  # Following Pytorch convention
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        if bias:
            self.out_proj.bias.data.zero_()

    def _get_mask(self, current_steps: int, device: torch.device, dtype: torch.dtype):
        # Return a causal mask, accounting for potentially stored past keys/values
        time_dim = 1
        if self._streaming_state:
            past_keys = self._streaming_state['past_keys']
            past_steps = past_keys.shape[time_dim]
        else:
            past_steps = 0

        queries_pos = torch.arange(
            past_steps, current_steps + past_steps, device=device).view(-1, 1)
        keys_pos = torch.arange(past_steps + current_steps, device=device).view(1, -1)
        delta = queries_pos - keys_pos
        valid = delta >= 0
        if self.past_context is not None:
            valid &= (delta <= self.past_context)
        return torch.where(
            valid,
            torch.zeros([], device=device, dtype=dtype),
            torch.full([], float('-inf'), device=device, dtype=dtype))

    def _complete_kv(self, k, v):
        time_dim = 1
        # Complete the key/value pair using the streaming state.
        if self._streaming_state:
            pk = self._streaming_state['past_keys']
            nk = torch.cat([pk, k], dim=time_dim)
            if v is k:
                nv = nk
            else:
                pv = self._streaming_state['past_values']
                nv = torch.cat([pv, v], dim=time_dim)
        else:
            nk = k
            nv = v

        assert nk.shape[time_dim] == nv.shape[time_dim]
        offset = 0
        if self.past_context is not None:
            offset = max(0, nk.shape[time_dim] - self.past_context)
        if self._is_streaming:
            self._streaming_state['past_keys'] = nk[:, offset:]
            if v is not k:
                self._streaming_state['past_values'] = nv[:, offset:]
            if 'offset' in self._streaming_state:
                self._streaming_state['offset'] += offset
            else:
                self._streaming_state['offset'] = torch.tensor(0)
        return nk, nv

    def _apply_rope(self, query: torch.Tensor, key: torch.Tensor):
        time_dim = 1
        # Apply rope embeddings to query and key tensors.
        assert self.rope is not None
        if 'past_keys' in self._streaming_state:
            past_keys_offset = self._streaming_state['past_keys'].shape[1]
        else:
            past_keys_offset = 0
        if 'offset' in self._streaming_state:
            past_context_offset = int(self._streaming_state['offset'].item())
        else:
            past_context_offset = 0
        streaming_offset = past_context_offset + past_keys_offset
        return self.rope.rotate_qk(query, key, start=streaming_offset, time_dim=time_dim)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                key_padding_mask=None, need_weights=False, attn_mask=None):
        dtype = query.dtype
        if self._is_streaming:
            assert self.causal or self.cross_attention, \
                "Streaming only available for causal or cross attention"

        if self.causal:
            assert attn_mask is None
            # At the moment we specialize only for the self-attention case.
            assert query.shape[1] == key.shape[1], "Causal only for same length query / key / value"
            assert value.shape[1] == key.shape[1], "Causal only for same length query / key / value"
            attn_mask = self._get_mask(query.shape[1], query.device, query.dtype)

        assert need_weights is False
        assert key_padding_mask is None
        assert query is key, "specialized implementation"
        assert value is key, "specialized implementation"
        projected = nn.functional.linear(query, self.in_proj_weight, self.in_proj_bias)
        b, t, _ = projected.shape
        # "b t (p h d) -> b t p h d"
        packed = projected.view(b, t, 3, self.num_heads, -1)
        q, k, v = packed.unbind(dim=2)

        if self.rope:
            q, k = self._apply_rope(q, k)
        k, v = self._complete_kv(k, v)

        # We include the dot product as float32, for consistency
        # with the other implementations that include that step
        # as part of the attention.
        q = q / q.shape[-1] ** 0.5
        pre_w = torch.einsum("bthd,bkhd-> bhtk", q, k)
        if attn_mask is not None:
            pre_w = pre_w + attn_mask
        w = torch.softmax(pre_w, dim=-1)
        w = F.dropout(w, self.dropout, training=self.training).to(v)
        # Key and value have the same format.
        x = torch.einsum("bhtk,bkhd -> bthd", w, v)
        x = x.to(dtype)
        x = x.reshape(b, t, -1)  # "b t h d -> b t (h d)"
        x = self.out_proj(x)
        return x, None


class StreamingTransformerLayer(StreamingModule):
    def __init__(self, d_model: int, num_heads: int, dim_feedforward: int = 32, causal: bool = False,
                 past_context: tp.Optional[int] = None, rope: tp.Optional[RotaryEmbedding] = None):
        super().__init__()
        self.self_attn = StreamingMultiheadAttention(d_model, num_heads, causal=causal,
                                                     past_context=past_context, rope=rope)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-5)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-5)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)

    def _sa_block(self, x, attn_mask=None, key_padding_mask=None):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False)[0]
        return x

    def forward(self, src: torch.Tensor):
        x = src
        x = x + self._sa_block(self.norm1(x))
        x = x + self.linear2(F.gelu(self.linear1(self.norm2(x))))
        return x


class StreamingTransformer(StreamingModule):
    def __init__(self, d_model: int, num_heads: int, num_layers: int, dim_feedforward: int = 32,
                 causal: bool = False, past_context: tp.Optional[int] = None,
                 positional_embedding: str = 'sin', max_period: float = 10_000, positional_scale: float = 1.,
                 checkpointing: str = 'none'):
        super().__init__()
        assert d_model % num_heads == 0

        self.positional_embedding = positional_embedding
        self.max_period = max_period
        self.positional_scale = positional_scale

        assert positional_embedding in ['sin', 'rope', 'sin_rope']
        self.rope: tp.Optional[RotaryEmbedding] = None
        if self.positional_embedding in ['rope', 'sin_rope']:
            self.rope = RotaryEmbedding(d_model // num_heads, max_period=max_period, scale=positional_scale)

        self.checkpointing = checkpointing

        self.layers = nn.ModuleList()
        for idx in range(num_layers):
            self.layers.append(
                StreamingTransformerLayer(
                    d_model=d_model, num_heads=num_heads, dim_feedforward=dim_feedforward,
                    causal=causal, past_context=past_context, rope=self.rope))

    def _apply_layer(self, layer, *args, **kwargs):
        method = self.checkpointing
        if method == 'none':
            return layer(*args, **kwargs)
        elif method == 'torch':
            return torch.utils.checkpoint.checkpoint(layer, *args, use_reentrant=False, **kwargs)
        else:
            raise ValueError(f"Checkpointing method {method} is unknown.")

    def forward(self, x: torch.Tensor, *args, **kwargs):
        B, T, C = x.shape

        if 'offsets' in self._streaming_state:
            offsets = self._streaming_state['offsets']
        else:
            offsets = torch.zeros(B, dtype=torch.long, device=x.device)

        if self.positional_embedding in ['sin', 'sin_rope']:
            positions = torch.arange(T, device=x.device).view(1, -1, 1)
            positions = positions + offsets.view(-1, 1, 1)
            pos_emb = create_sin_embedding(positions, C, max_period=self.max_period, dtype=x.dtype)
            x = x + self.positional_scale * pos_emb

        for layer in self.layers:
            x = self._apply_layer(layer, x, *args, **kwargs)

        if self._is_streaming:
            self._streaming_state['offsets'] = offsets + T

        return x


def build_streaming_lm():
    transformer = StreamingTransformer(d_model=8, num_heads=2, num_layers=2, causal=True,
                                       past_context=3, positional_embedding='sin_rope')
    return torch.compile(transformer.eval())


def make():
    torch.manual_seed(0)
    transformer = StreamingTransformer(d_model=8, num_heads=2, num_layers=2, causal=True,
                                       past_context=3, positional_embedding='sin_rope').eval()
    transformer._set_streaming(True)  # the body of `with lm.streaming():` in LMModel.generate
    prompt = torch.randn(1, 4, 8)
    with torch.no_grad():
        transformer(prompt)  # the prompt is consumed before the streamed steps
    step = torch.randn(1, 1, 8)
    return transformer, [(step,), (step * 2,), (torch.randn(1, 2, 8),)]
