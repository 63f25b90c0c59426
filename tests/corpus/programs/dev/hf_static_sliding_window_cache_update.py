"""Static sliding-window KV cache update: python-int fill level, in-place `index_copy_` under try/except, roll-and-overwrite once full (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/cache_utils.py:23-60,403-507,510-634
Kept: StaticLayer (tensor `cumulative_length`, lazy_initialization with
`mark_static_address` skipped while compiling, update's `index_copy_` with the
NotImplementedError fallback) and StaticSlidingWindowLayer (the int
`cumulative_length_int`, the four update paths: full with one new token
(roll, tensor index -1, copy_ back), full with several, becoming full on an
empty or partly filled cache, and not full; get_mask_sizes; get_seq_length).
Simplified: the cache is driven by a one-head attention step instead of a
decoder; `is_torchdynamo_compiling()` is `torch.compiler.is_compiling()`.
"""
import torch
from torch import nn


class CacheLayerMixin:
    is_compileable = False

    def __init__(self):
        self.keys, self.values = None, None
        self.is_initialized = False

    def reset(self) -> None:
        if self.is_initialized:
            self.keys.zero_()
            self.values.zero_()
        if hasattr(self, "cumulative_length"):
            self.cumulative_length.zero_()


class StaticLayer(CacheLayerMixin):
    is_compileable = True
    is_sliding = False

    def __init__(self, max_cache_len: int, **kwargs):
        super().__init__()
        self.max_cache_len = max_cache_len
        # Very important that it's a tensor here, to avoid recompiling when we update it and use it to create positions
        self.cumulative_length = torch.tensor(0, dtype=int)

    def lazy_initialization(self, key_states, value_states):
        self.dtype, self.device = key_states.dtype, key_states.device
        self.batch_size, self.num_heads = key_states.shape[:2]
        self.v_head_dim = value_states.shape[-1]
        self.k_head_dim = key_states.shape[-1]

        self.keys = torch.zeros(
            (self.batch_size, self.num_heads, self.max_cache_len, self.k_head_dim),
            dtype=self.dtype,
            device=self.device,
        )
        self.values = torch.zeros(
            (self.batch_size, self.num_heads, self.max_cache_len, self.v_head_dim),
            dtype=self.dtype,
            device=self.device,
        )
        self.cumulative_length = self.cumulative_length.to(self.device)
        if not torch.compiler.is_compiling():
            torch._dynamo.mark_static_address(self.keys)
            torch._dynamo.mark_static_address(self.values)
            torch._dynamo.mark_static_address(self.cumulative_length)

        self.is_initialized = True

    def update(self, key_states, value_states, *args, **kwargs):
        # Lazy initialization
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)

        # Create a tensor to slice the static kv at the correct indices
        kv_length = key_states.shape[-2]
        cache_position = torch.arange(kv_length, device=self.device) + self.cumulative_length
        # Note that has to be performed in-place, as we have a static address that we need to keep
        self.cumulative_length.add_(kv_length)

        # Update the cache
        try:
            self.keys.index_copy_(2, cache_position, key_states)
            self.values.index_copy_(2, cache_position, value_states)
        except NotImplementedError:
            # Fallback for devices like MPS where index_copy_ might not be supported.
            self.keys[:, :, cache_position] = key_states
            self.values[:, :, cache_position] = value_states

        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.cumulative_length if self.is_initialized else 0


class StaticSlidingWindowLayer(StaticLayer):
    is_sliding = True

    def __init__(self, max_cache_len: int, sliding_window: int, **kwargs):
        effective_max_cache_len = min(sliding_window, max_cache_len)
        super().__init__(max_cache_len=effective_max_cache_len)
        # Here, to avoid data-dependent control flows, we also need to use a python int to keep track of the cumulative length
        self.cumulative_length_int = 0

    def update(self, key_states, value_states, *args, **kwargs):
        # Lazy initialization
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)

        kv_length = key_states.shape[-2]
        current_length = self.cumulative_length_int
        is_full = current_length >= self.max_cache_len
        # Update it now that we saved the value above
        self.cumulative_length_int += kv_length

        if is_full:
            if key_states.shape[-2] == 1:
                # Roll all values to the left by 1 position
                new_keys = self.keys.roll(-1, dims=-2)
                new_values = self.values.roll(-1, dims=-2)
                # Overwrite the last position with new states
                index = torch.tensor([-1], dtype=int, device=self.device)
                new_keys[:, :, index] = key_states
                new_values[:, :, index] = value_states

                # Copy back into `self` (do not just assign again) in order to keep the static dynamo address
                self.keys.copy_(new_keys)
                self.values.copy_(new_values)

                return self.keys, self.values
            # Already full but using more than 1 new token (e.g. prefill caching, chat continuation, etc...)
            else:
                full_key_states = torch.cat((self.keys[:, :, 1:, :], key_states), dim=-2)
                full_value_states = torch.cat((self.values[:, :, 1:, :], value_states), dim=-2)
        # Not yet full, but becoming full on this update
        elif current_length + kv_length > self.max_cache_len:
            # Fast prefill path, no need to cat() in this case, as the cache is currently empty
            if current_length == 0:
                full_key_states = key_states
                full_value_states = value_states
            else:
                full_key_states = torch.cat((self.keys[:, :, :current_length, :], key_states), dim=-2)
                full_value_states = torch.cat((self.values[:, :, :current_length, :], value_states), dim=-2)
        else:
            cache_position = torch.arange(kv_length, device=self.device) + self.cumulative_length
            try:
                self.keys.index_copy_(2, cache_position, key_states)
                self.values.index_copy_(2, cache_position, value_states)
            except NotImplementedError:
                self.keys[:, :, cache_position] = key_states
                self.values[:, :, cache_position] = value_states

            self.cumulative_length.add_(kv_length)

            return self.keys, self.values

        # We only cache the last `sliding_window` tokens
        self.keys.copy_(full_key_states[:, :, -self.max_cache_len :, :])
        self.values.copy_(full_value_states[:, :, -self.max_cache_len :, :])
        # we should return the whole states instead of `self.keys/values` here, as otherwise we lose some context
        return full_key_states, full_value_states

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        sliding_window = self.max_cache_len
        is_full = self.cumulative_length_int >= self.max_cache_len

        kv_offset = max(self.cumulative_length_int - sliding_window + 1, 0)
        # The cache is already full
        if is_full:
            kv_length = sliding_window + query_length - 1
        # Not yet full, but becoming full on this update
        elif self.cumulative_length_int + query_length > sliding_window:
            kv_length = self.cumulative_length_int + query_length
        # Here the Cache is still smaller than the local size, but we return the local size as it's static
        else:
            kv_length = sliding_window

        return kv_length, kv_offset

    def get_seq_length(self) -> int:
        return self.cumulative_length_int


class SlidingAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.o_proj = nn.Linear(dim, dim)

    def forward(self, hidden_states, cache_layer):
        q, k, v = self.qkv(hidden_states)[:, None].chunk(3, dim=-1)
        kv_length, kv_offset = cache_layer.get_mask_sizes(q.shape[-2])
        keys, values = cache_layer.update(k, v)
        out = nn.functional.scaled_dot_product_attention(q, keys[:, :, :kv_length], values[:, :, :kv_length])
        return self.o_proj(out[:, 0]), kv_offset


attention = torch.compile(SlidingAttention().eval(), mode="reduce-overhead")


def _filled(tokens, window=4):
    layer = StaticSlidingWindowLayer(max_cache_len=16, sliding_window=window)
    if tokens:
        layer.update(torch.randn(1, 1, tokens, 8), torch.randn(1, 1, tokens, 8))
    return layer


def make():
    torch.manual_seed(0)
    one = torch.randn(1, 1, 8)
    three = torch.randn(1, 3, 8)
    return SlidingAttention().eval(), [
        (one, _filled(0)),  # not full: index_copy_
        (three, _filled(2)),  # becoming full on a partly filled cache
        (torch.randn(1, 6, 8), _filled(0)),  # becoming full on an empty cache (prefill)
        (one, _filled(4)),  # full, one new token: roll
        (three, _filled(5)),  # full, several new tokens
    ]
