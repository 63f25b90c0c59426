"""GM523 negative: an encoder given only a padding mask, and a layer given a causal mask, have nothing to test (no break).

Sentence encoders pass `src_key_padding_mask` alone; a bare `nn.TransformerEncoderLayer` takes
its causal flag as given instead of comparing the mask.
"""
import torch
from torch import nn


class SentenceEncoder(nn.Module):
    def __init__(self, d_model: int = 8):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, 2, 16, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.last = nn.TransformerEncoderLayer(d_model, 2, 16, dropout=0.0)

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        h = self.encoder(x, src_key_padding_mask=padding)
        causal = nn.Transformer.generate_square_subsequent_mask(x.shape[0])
        return self.last(h, src_mask=causal)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[1, 3:] = True
    return SentenceEncoder().eval(), [(torch.randn(5, 2, 8), padding)]


compiled = torch.compile(SentenceEncoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
