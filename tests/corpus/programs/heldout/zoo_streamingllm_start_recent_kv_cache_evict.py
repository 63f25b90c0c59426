"""StreamingLLM StartRecentKVCache: keep attention-sink + recent KV entries, with `seq_len` checks on the cache size.

Source: mit-han-lab/streaming-llm@d729b3ffc947caca63fc0f7644b7468ca2d50881:streaming_llm/kv_cache.py:1-119
Kept: slice1d/2d/3d and the DIM_TO_SLICE table, StartRecentKVCache with its
printing constructor, `__call__` (early return when `seq_len <=
cache_size`, else nested list comprehension of `torch.cat` of the start and
recent slices), and `evict_for_space` with `num_coming`.
Simplified: start 2 + recent 6 entries; two layers of (1, 2, seq, 4) KV.
The compiled entry is the per-step eviction helper, compiled once
(`torch.compile(kv_cache.evict_for_space)`) as a streaming loop would call it.
"""
import torch


def slice2d(x, start, end):
    return x[:, :, start:end, ...]


def slice3d(x, start, end):
    return x[:, :, :, start:end, ...]


def slice1d(x, start, end):
    return x[:, start:end, ...]


DIM_TO_SLICE = {
    1: slice1d,
    2: slice2d,
    3: slice3d,
}


class StartRecentKVCache:
    def __init__(
        self,
        start_size=4,
        recent_size=512,
        k_seq_dim=2,
        v_seq_dim=2,
    ):
        print(f"StartRecentKVCache: {start_size}, {recent_size}")
        self.start_size = start_size
        self.recent_size = recent_size
        self.cache_size = start_size + recent_size
        self.k_seq_dim = k_seq_dim
        self.v_seq_dim = v_seq_dim
        self.k_slice = DIM_TO_SLICE[k_seq_dim]
        self.v_slice = DIM_TO_SLICE[v_seq_dim]

    def __call__(self, past_key_values):
        if past_key_values is None:
            return None
        seq_len = past_key_values[0][0].size(self.k_seq_dim)
        if seq_len <= self.cache_size:
            return past_key_values
        return [
            [
                torch.cat(
                    [
                        self.k_slice(k, 0, self.start_size),
                        self.k_slice(k, seq_len - self.recent_size, seq_len),
                    ],
                    dim=self.k_seq_dim,
                ),
                torch.cat(
                    [
                        self.v_slice(v, 0, self.start_size),
                        self.v_slice(v, seq_len - self.recent_size, seq_len),
                    ],
                    dim=self.v_seq_dim,
                ),
            ]
            for k, v in past_key_values
        ]

    def evict_for_space(self, past_key_values, num_coming):
        if past_key_values is None:
            return None
        seq_len = past_key_values[0][0].size(self.k_seq_dim)
        if seq_len + num_coming <= self.cache_size:
            return past_key_values
        return [
            [
                torch.cat(
                    [
                        self.k_slice(k, 0, self.start_size),
                        self.k_slice(
                            k, seq_len - self.recent_size + num_coming, seq_len
                        ),
                    ],
                    dim=self.k_seq_dim,
                ),
                torch.cat(
                    [
                        self.v_slice(v, 0, self.start_size),
                        self.v_slice(
                            v, seq_len - self.recent_size + num_coming, seq_len
                        ),
                    ],
                    dim=self.v_seq_dim,
                ),
            ]
            for k, v in past_key_values
        ]


def make_cache():
    return StartRecentKVCache(start_size=2, recent_size=6, k_seq_dim=2, v_seq_dim=2)


def make():
    torch.manual_seed(0)
    kv_cache = make_cache()

    def past(seq):
        return [(torch.randn(1, 2, seq, 4), torch.randn(1, 2, seq, 4)) for _ in range(2)]

    return kv_cache.evict_for_space, [
        (None, 3),
        (past(4), 3),
        (past(7), 3),
    ]


def main():
    kv_cache = make_cache()
    evict = torch.compile(kv_cache.evict_for_space)
    return evict
