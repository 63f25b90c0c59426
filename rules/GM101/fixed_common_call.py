"""GM101 bad: Phi-3 LongRoPE style -- both branches call `self.register_buffer("inv_freq", ..., persistent=False)` with different tensors, chosen by a tensor value."""
import torch
from torch import nn


class Phi3LongRoPEScaledRotaryEmbedding(nn.Module):
    def __init__(self, dim=8, original_max_position_embeddings=4, base=10000.0):
        super().__init__()
        self.dim = dim
        self.base = base
        self.original_max_position_embeddings = original_max_position_embeddings
        self.short_factor = [1.0] * (dim // 2)
        self.long_factor = [4.0] * (dim // 2)

    def forward(self, x, position_ids):
        seq_len = position_ids.max() + 1
        inv_freq_shape = torch.arange(0, self.dim, 2, dtype=torch.float32) / self.dim
        # expect: GM101
        ext_factors = torch.where(
            seq_len > self.original_max_position_embeddings,
            torch.tensor(self.long_factor, dtype=torch.float32),
            torch.tensor(self.short_factor, dtype=torch.float32),
        )
        self.register_buffer(
            "inv_freq",
            1.0 / (ext_factors * self.base ** inv_freq_shape),
            persistent=False,
        )
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return x * emb.cos() + x * emb.sin()


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    x = torch.ones(1, 4, 8)
    short = torch.arange(4).unsqueeze(0)
    long = torch.arange(4).unsqueeze(0) + 6
    return Phi3LongRoPEScaledRotaryEmbedding(), [(x, short), (x, long)]


compiled = torch.compile(Phi3LongRoPEScaledRotaryEmbedding())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
