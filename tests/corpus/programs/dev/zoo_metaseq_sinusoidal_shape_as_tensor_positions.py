"""metaseq SinusoidalPositionalEmbedding: the batch and sequence sizes come from `torch.onnx.operators.shape_as_tensor(input)`, so `max_pos > self.weights.size(0)` compares a tensor, the incremental path indexes the table with `timestep.view(-1)[0] + 1`, and the output is viewed with tensor sizes.

Source: facebookresearch/metaseq@024a5a2cc6a4c5b366066ad72e7882bfcee4270c:metaseq/modules/sinusoidal_positional_embedding.py:15-107
Also: metaseq/modules/positional_embedding.py (PositionalEmbedding factory:
`init_size=num_embeddings + padding_idx + 1` for the sinusoidal case),
metaseq/utils.py (make_positions with onnx_trace).
Kept: SinusoidalPositionalEmbedding verbatim, make_positions, and the
decoder's embedding step (`embed_scale * embed_tokens(tokens) + positions`,
last-token slicing in incremental decoding).
Simplified: embed 8, vocab 12, max positions 6 (so a 9-token input grows the
table); the incremental state is a plain dict.
"""
import math
from typing import Any, Optional

import torch
import torch.onnx.operators
from torch import Tensor, nn


def make_positions(tensor, padding_idx: int, onnx_trace: bool = False):
    """Replace non-padding symbols with their position numbers.

    Position numbers begin at padding_idx+1. Padding symbols are ignored.
    """
    # The series of casts and type-conversions here are carefully
    # balanced to both work with ONNX export and XLA. In particular XLA
    # prefers ints, cumsum defaults to output longs, and ONNX doesn't know
    # how to handle the dtype kwarg in cumsum.
    mask = tensor.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


class SinusoidalPositionalEmbedding(nn.Module):
    """This module produces sinusoidal positional embeddings of any length.

    Padding symbols are ignored.
    """

    def __init__(self, embedding_dim, padding_idx, init_size=1024):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx if padding_idx is not None else 0
        self.weights = SinusoidalPositionalEmbedding.get_embedding(
            init_size, embedding_dim, padding_idx
        )
        self.onnx_trace = False
        self.register_buffer("_float_tensor", torch.FloatTensor(1))
        self.max_positions = int(1e5)

    @staticmethod
    def get_embedding(
        num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None
    ):
        """Build sinusoidal embeddings.

        This matches the implementation in tensor2tensor, but differs slightly
        from the description in Section 3.5 of "Attention Is All You Need".
        """
        half_dim = embedding_dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
        emb = torch.arange(num_embeddings, dtype=torch.float).unsqueeze(
            1
        ) * emb.unsqueeze(0)
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(
            num_embeddings, -1
        )
        if embedding_dim % 2 == 1:
            # zero pad
            emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
        if padding_idx is not None:
            emb[padding_idx, :] = 0
        return emb

    def forward(
        self,
        input,
        incremental_state: Optional[Any] = None,
        timestep: Optional[Tensor] = None,
        positions: Optional[Any] = None,
    ):
        """Input is expected to be of size [bsz x seqlen]."""
        bspair = torch.onnx.operators.shape_as_tensor(input)
        bsz, seq_len = bspair[0], bspair[1]
        max_pos = self.padding_idx + 1 + seq_len
        if self.weights is None or max_pos > self.weights.size(0):
            # recompute/expand embeddings if needed
            self.weights = SinusoidalPositionalEmbedding.get_embedding(
                max_pos, self.embedding_dim, self.padding_idx
            )
        self.weights = self.weights.to(self._float_tensor)

        if incremental_state is not None:
            # positions is the same for every token when decoding a single step
            pos = timestep.view(-1)[0] + 1 if timestep is not None else seq_len
            if self.onnx_trace:
                return (
                    self.weights.index_select(index=self.padding_idx + pos, dim=0)
                    .unsqueeze(1)
                    .repeat(bsz, 1, 1)
                )
            return self.weights[self.padding_idx + pos, :].expand(bsz, 1, -1)

        positions = make_positions(
            input, self.padding_idx, onnx_trace=self.onnx_trace
        )
        if self.onnx_trace:
            flat_embeddings = self.weights.detach().index_select(0, positions.view(-1))
            embedding_shape = torch.cat(
                (bsz.view(1), seq_len.view(1), torch.tensor([-1], dtype=torch.long))
            )
            embeddings = torch.onnx.operators.reshape_from_tensor_shape(
                flat_embeddings, embedding_shape
            )
            return embeddings
        return (
            self.weights.index_select(0, positions.view(-1))
            .view(bsz, seq_len, -1)
            .detach()
        )


def PositionalEmbedding(num_embeddings: int, embedding_dim: int, padding_idx: int, learned: bool = False):
    if learned:
        raise NotImplementedError("only the sinusoidal case is kept")
    return SinusoidalPositionalEmbedding(
        embedding_dim,
        padding_idx,
        init_size=num_embeddings + padding_idx + 1,
    )


class DecoderEmbedding(nn.Module):
    def __init__(self, vocab_size=12, embed_dim=8, padding_idx=1, max_target_positions=6):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        self.embed_scale = math.sqrt(embed_dim)
        self.embed_positions = PositionalEmbedding(max_target_positions, embed_dim, padding_idx, learned=False)

    def forward(self, tokens, incremental_state=None, timestep=None):
        positions = self.embed_positions(tokens, incremental_state=incremental_state, timestep=timestep)
        if incremental_state:
            tokens = tokens[:, -1:]
        x = self.embed_scale * self.embed_tokens(tokens)
        return x + positions


embed = torch.compile(DecoderEmbedding())


def make():
    torch.manual_seed(0)
    module = DecoderEmbedding()
    short = torch.tensor([[4, 5, 6], [7, 8, 1]])
    long = torch.randint(2, 12, (2, 9))
    return module, [
        (short,),
        (long,),
        (short, {"step": 1}, torch.tensor([2])),
    ]
