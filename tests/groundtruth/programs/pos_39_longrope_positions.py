"""GM101 positive: LongRoPE-style factor choice on the largest position id (`if position_ids.max() >= self.original_max`)."""
import torch
from torch import nn


class LongRopeEmbedding(nn.Module):
    def __init__(self, dim=8, original_max=4, base=10000.0):
        super().__init__()
        exponents = torch.arange(0, dim, 2).float() / dim
        self.register_buffer("short_inv_freq", 1.0 / (base ** exponents), persistent=False)
        self.register_buffer("long_inv_freq", 1.0 / (4.0 * base ** exponents), persistent=False)
        self.original_max = original_max

    def forward(self, x, position_ids):
        if position_ids.max() >= self.original_max:  # expect: GM101
            inv_freq = self.long_inv_freq
        else:
            inv_freq = self.short_inv_freq
        freqs = position_ids[..., None].float() * inv_freq
        emb = torch.cat([freqs, freqs], dim=-1)
        return x * emb.cos() + x * emb.sin()


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    x = torch.ones(1, 4, 8)
    short = torch.arange(4).unsqueeze(0)
    long = torch.arange(4).unsqueeze(0) + 6
    return LongRopeEmbedding(), [(x, short), (x, long)]


compiled = torch.compile(LongRopeEmbedding())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
