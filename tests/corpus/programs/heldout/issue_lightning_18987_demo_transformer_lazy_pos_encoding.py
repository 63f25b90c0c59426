"""Lightning demo Transformer: PositionalEncoding builds `self.pe` lazily on the first forward.

Source: Lightning-AI/pytorch-lightning#18987 (https://github.com/Lightning-AI/pytorch-lightning/pull/18987)
The PR turns the demo's positional encoding into a plain tensor attribute
initialised on the first forward (`if self.pe is None: self.pe = self._init_pos_encoding(...)`)
and adds `test_compile_transformer`; the review asks for `fullgraph=True` and the
author answers "Unfortunately we get a graph break".
Translated from Lightning-AI/pytorch-lightning@01a61f1d:src/lightning/pytorch/demos/transformer.py
(Transformer, PositionalEncoding) and the PR's tests/tests_pytorch/demos/transformer.py
(`Transformer(vocab_size=8)`, compiled, called on random token ids).
Kept: the causal-mask construction with masked_fill, the `x + self.pe[...]`
statement whose result is discarded (as written upstream), log_softmax + view.
Simplified: ninp/nhid 16, 1+1 layers, max_len 64; no WikiText2/LightningModule.
"""
import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class Transformer(nn.Module):
    def __init__(
        self,
        vocab_size: int = 33278,  # default for WikiText2
        ninp: int = 16,
        nhead: int = 2,
        nhid: int = 16,
        nlayers: int = 1,
        dropout: float = 0.2,
    ) -> None:
        super().__init__()
        self.pos_encoder = PositionalEncoding(ninp, dropout, max_len=64)
        self.embedding = nn.Embedding(vocab_size, ninp)
        self.transformer = nn.Transformer(
            d_model=ninp,
            nhead=nhead,
            num_encoder_layers=nlayers,
            num_decoder_layers=nlayers,
            dim_feedforward=nhid,
            dropout=dropout,
            batch_first=True,
        )
        self.decoder = nn.Linear(ninp, vocab_size)

        self.ninp = ninp
        self.vocab_size = vocab_size
        self.src_mask = None

    def forward(self, inputs: Tensor, target: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        _, t = inputs.shape

        # we assume target is already shifted w.r.t. inputs
        if mask is None:
            mask = torch.tril(torch.ones(t, t, device=inputs.device)) == 1
            mask = mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, float(0.0))

        src = self.pos_encoder(self.embedding(inputs) * math.sqrt(self.ninp))
        target = self.pos_encoder(self.embedding(target) * math.sqrt(self.ninp))
        output = self.transformer(src, target, tgt_mask=mask)
        output = self.decoder(output)
        output = F.log_softmax(output, dim=-1)
        output = output.view(-1, self.vocab_size)
        return output


class PositionalEncoding(nn.Module):
    def __init__(self, dim: int, dropout: float = 0.1, max_len: int = 5000) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self.dim = dim
        self.max_len = max_len
        self.pe: Optional[Tensor] = None

    def forward(self, x: Tensor) -> Tensor:
        if self.pe is None:
            # 1) can't use buffer, see https://github.com/pytorch/pytorch/issues/68407
            # 2) can't use parameter becauses pe gets sliced and DDP requires all params to participate in forward
            # 3) can't make it a `requires_grad=False` parameter because FSDP in PyTorch < 2.1 needs all params to
            # require grad
            self.pe = self._init_pos_encoding(device=x.device)

        x + self.pe[: x.size(0), :]
        return self.dropout(x)

    def _init_pos_encoding(self, device: torch.device) -> Tensor:
        pe = torch.zeros(self.max_len, self.dim, device=device)
        position = torch.arange(0, self.max_len, dtype=torch.float, device=device).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, self.dim, 2, device=device).float() * (-math.log(10000.0) / self.dim))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        return pe


def test_compile_transformer():
    model = Transformer(vocab_size=8)
    model = torch.compile(model)
    inputs = torch.randint(0, 8, size=(2, 10))
    model(inputs, inputs)


def make():
    torch.manual_seed(0)
    inputs = torch.randint(0, 8, size=(2, 10))
    target = torch.randint(0, 8, size=(2, 10))
    causal = torch.zeros(10, 10)
    return Transformer(vocab_size=8), [(inputs, inputs), (inputs, target, causal)]
