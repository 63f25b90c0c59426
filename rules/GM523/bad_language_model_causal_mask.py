"""GM523: a word-level language model passes its causal mask to `nn.TransformerEncoder` without `is_causal` (GB0124).

PyTorch's language-modelling tutorial (`TransformerModel`) builds the mask with
`nn.Transformer.generate_square_subsequent_mask` and calls the encoder with it; the encoder
then compares the mask with a causal one and reads the answer on the host.
"""
import math

import torch
from torch import nn


class TransformerModel(nn.Module):
    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int, nlayers: int):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout=0.0)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        src = self.embedding(src) * math.sqrt(self.d_model)
        src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        output = self.transformer_encoder(src, src_mask)
        return self.linear(output)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    model = TransformerModel(ntoken=20, d_model=8, nhead=2, d_hid=16, nlayers=1).eval()
    return model, [(torch.randint(0, 20, (5, 2)),)]


compiled = torch.compile(TransformerModel(20, 8, 2, 16, 1))

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
