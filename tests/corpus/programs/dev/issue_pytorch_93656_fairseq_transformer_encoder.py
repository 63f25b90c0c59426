"""fairseq TransformerEncoder: `has_pads = ... or encoder_padding_mask.any()` then `if has_pads:`, and
SinusoidalPositionalEmbedding's `if self.weights is None or max_pos > self.weights.size(0):` where `max_pos`
comes from `torch.onnx.operators.shape_as_tensor(input)` (a tensor).

Source: https://github.com/pytorch/pytorch/issues/93656 (explain output on fairseq
models/transformer/transformer_encoder.py:127-225 and modules/sinusoidal_positional_embedding.py:71)
Kept: forward_scriptable's padding mask / has_pads / masking, forward_embedding (embed scale, positions,
dropout), SinusoidalPositionalEmbedding.get_embedding and forward (shape_as_tensor, weight expansion with
attribute reassignment, make_positions, index_select).
Simplified: no layers after the embedding, no layernorm_embedding/quant_noise; tiny sizes.
"""
import math

import torch
import torch.onnx.operators
from torch import nn


def make_positions(tensor, padding_idx: int, onnx_trace: bool = False):
    mask = tensor.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


class SinusoidalPositionalEmbedding(nn.Module):
    def __init__(self, embedding_dim, padding_idx, init_size=1024):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weights = SinusoidalPositionalEmbedding.get_embedding(init_size, embedding_dim, padding_idx)
        self.onnx_trace = False
        self.register_buffer("_float_tensor", torch.FloatTensor(1))

    @staticmethod
    def get_embedding(num_embeddings: int, embedding_dim: int, padding_idx=None):
        half_dim = embedding_dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
        emb = torch.arange(num_embeddings, dtype=torch.float).unsqueeze(1) * emb.unsqueeze(0)
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
        if embedding_dim % 2 == 1:
            # zero pad
            emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
        if padding_idx is not None:
            emb[padding_idx, :] = 0
        return emb

    def forward(self, input):
        """Input is expected to be of size [bsz x seqlen]."""
        bspair = torch.onnx.operators.shape_as_tensor(input)
        bsz, seq_len = bspair[0], bspair[1]
        max_pos = self.padding_idx + 1 + seq_len
        if self.weights is None or max_pos > self.weights.size(0):
            # recompute/expand embeddings if needed
            self.weights = SinusoidalPositionalEmbedding.get_embedding(max_pos, self.embedding_dim, self.padding_idx)
        self.weights = self.weights.to(self._float_tensor)

        positions = make_positions(input, self.padding_idx, onnx_trace=self.onnx_trace)
        return self.weights.index_select(0, positions.view(-1)).view(bsz, seq_len, -1).detach()


class TransformerEncoder(nn.Module):
    def __init__(self, vocab=12, dim=4, padding_idx=1, max_source_positions=6):
        super().__init__()
        self.padding_idx = padding_idx
        self.embed_tokens = nn.Embedding(vocab, dim, padding_idx)
        self.embed_scale = math.sqrt(dim)
        self.embed_positions = SinusoidalPositionalEmbedding(dim, padding_idx, init_size=max_source_positions)
        self.dropout_module = nn.Dropout(0.0)

    def forward_embedding(self, src_tokens, token_embedding=None):
        # embed tokens and positions
        if token_embedding is None:
            token_embedding = self.embed_tokens(src_tokens)
        x = embed = self.embed_scale * token_embedding
        if self.embed_positions is not None:
            x = embed + self.embed_positions(src_tokens)
        x = self.dropout_module(x)
        return x, embed

    def forward_scriptable(self, src_tokens, src_lengths=None, token_embeddings=None):
        # compute padding mask
        encoder_padding_mask = src_tokens.eq(self.padding_idx)
        has_pads = src_tokens.device.type == "xla" or encoder_padding_mask.any()

        x, encoder_embedding = self.forward_embedding(src_tokens, token_embeddings)

        # account for padding while computing the representation
        if has_pads:
            x = x * (1 - encoder_padding_mask.unsqueeze(-1).type_as(x))

        # B x T x C -> T x B x C
        x = x.transpose(0, 1)
        return x, encoder_padding_mask

    def forward(self, src_tokens, src_lengths=None):
        return self.forward_scriptable(src_tokens, src_lengths)


encoder = torch.compile(TransformerEncoder())


def make():
    torch.manual_seed(0)
    return TransformerEncoder(), [(torch.tensor([[4, 5, 6, 7]]),), (torch.tensor([[4, 5, 6, 7, 8, 9, 1]]),)]
