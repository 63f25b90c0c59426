"""metaseq TransformerDecoder with `self_attn_doc_sep` set: `forward_embedding` resets learned positions at document separators found with `(tokens == sep).nonzero().tolist()` and Python loops, `buffered_future_mask` blocks attention across documents the same way, and `extract_features` tests `prev_output_tokens.eq(pad).any()`.

Source: facebookresearch/metaseq@03748bfcac8c63465f29d04bf1ce8cdff979d19e:metaseq/models/transformer_decoder.py:248-480
Also: metaseq/modules/learned_positional_embedding.py (LearnedPositionalEmbedding.forward),
metaseq/utils.py (make_positions, fill_with_neg_inf).
Kept: forward_embedding, forward, extract_features, output_layer,
max_positions and buffered_future_mask verbatim (doc-sep and alibi-off
paths); LearnedPositionalEmbedding.forward verbatim.
Simplified: decoder layers are one pre-LN block around nn.MultiheadAttention
(1 head, so the [B, T, T] mask is a valid 3-D attn_mask); no FSDP wrapping or
checkpointing; Dropout is nn.Dropout; embed 8, vocab 12, 2 layers.
"""
import math
from typing import Any, Dict, List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

UNSPECIFIED_DOC_SEP = -1


def make_positions(tensor, padding_idx: int):
    """Replace non-padding symbols with their position numbers.

    Position numbers begin at padding_idx+1. Padding symbols are ignored.
    """
    mask = tensor.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


def fill_with_neg_inf(t):
    """FP16-compatible function that fills a tensor with -inf."""
    return t.float().fill_(float("-inf")).type_as(t)


class LearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int):
        super().__init__(num_embeddings, embedding_dim, padding_idx)
        if self.padding_idx is not None:
            self.max_positions = self.num_embeddings - self.padding_idx - 1
        else:
            self.max_positions = self.num_embeddings

    def forward(
        self,
        input: Tensor,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        positions: Optional[Tensor] = None,
    ):
        """Input is expected to be of size [bsz x seqlen]."""
        assert (positions is None) or (
            self.padding_idx is None
        ), "If positions is pre-computed then padding_idx should not be set."

        if positions is None and self.padding_idx is not None:
            positions = make_positions(input, self.padding_idx)

        return F.embedding(
            positions,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )


class DecoderLayer(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(args.decoder_embed_dim)
        self.self_attn = nn.MultiheadAttention(args.decoder_embed_dim, args.decoder_attention_heads)
        self.final_layer_norm = nn.LayerNorm(args.decoder_embed_dim)
        self.fc1 = nn.Linear(args.decoder_embed_dim, 2 * args.decoder_embed_dim)
        self.fc2 = nn.Linear(2 * args.decoder_embed_dim, args.decoder_embed_dim)

    def forward(self, x, incremental_state=None, self_attn_mask=None,
                self_attn_padding_mask=None, recompute_fc1=False):
        residual = x
        x = self.self_attn_layer_norm(x)
        x, _ = self.self_attn(x, x, x, key_padding_mask=self_attn_padding_mask,
                              attn_mask=self_attn_mask, need_weights=False)
        x = residual + x
        residual = x
        x = self.final_layer_norm(x)
        x = self.fc2(F.gelu(self.fc1(x)))
        return residual + x


class TransformerDecoder(nn.Module):
    def __init__(self, args, embed_tokens):
        super().__init__()
        self.args = args
        self._future_mask = torch.empty(0)
        self.dropout_module = nn.Dropout(args.dropout)
        self.embed_dim = args.decoder_embed_dim
        self.padding_idx = embed_tokens.padding_idx
        self.max_target_positions = args.max_target_positions
        self.embed_tokens = embed_tokens
        self.embed_scale = 1.0 if args.no_scale_embedding else math.sqrt(self.embed_dim)

        self.use_alibi: bool = getattr(args, "alibi", True)
        self.self_attn_doc_sep: int = getattr(
            args, "self_attn_doc_sep", UNSPECIFIED_DOC_SEP
        )
        self.embed_positions = (
            LearnedPositionalEmbedding(
                self.max_target_positions + self.padding_idx + 1,
                self.embed_dim,
                self.padding_idx,
            )
            if args.decoder_learned_pos and not self.use_alibi
            else None
        )
        self.layers = nn.ModuleList([DecoderLayer(args) for _ in range(args.decoder_layers)])
        self.layer_norm = nn.LayerNorm(self.embed_dim)
        self.output_projection = nn.Linear(self.embed_dim, args.vocab_size, bias=False)

    def forward_embedding(
        self,
        tokens,
        token_embedding: Optional[torch.Tensor] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
    ):
        # embed tokens and positions
        if self.self_attn_doc_sep != UNSPECIFIED_DOC_SEP:
            # create own positions when self_attn_doc_sep is set
            # We are essentially resetting positions based on document separator tokens.
            mask = tokens.ne(self.padding_idx).int()
            mask_with_reset = tokens.ne(self.padding_idx).int()
            mask_with_reset[:, :] = 1
            doc_id_indices = (tokens == self.self_attn_doc_sep).nonzero().tolist()

            # Based on the location of document seperator token (batch_doc_indices), we would reset
            # positional embeddings. The document seperator token marks the end of the preceding
            # document.
            for batch_idx in range(tokens.size(0)):
                # The self_attn_doc_sep token marks the end of the previous document. Therefore,
                # we need to add 1 to the indices to mark the start of documents.
                batch_doc_indices = [
                    index[1] + 1
                    for index in doc_id_indices
                    # index[1] + 1 < tokens.size(1) to prevent overflow
                    if index[0] == batch_idx and index[1] + 1 < tokens.size(1)
                ]
                batch_doc_indices.sort()
                for k, doc_sep_idx in enumerate(batch_doc_indices):
                    if k == 0:
                        mask_with_reset[batch_idx, doc_sep_idx] = -doc_sep_idx + 1
                    else:
                        mask_with_reset[batch_idx, doc_sep_idx] = (
                            batch_doc_indices[k - 1] - doc_sep_idx + 1
                        )
            positions = (
                torch.cumsum(mask_with_reset, dim=1).type_as(mask) * mask
            ).long() + self.padding_idx

            # If the positions are pre-computed, padding_idx should not be set.
            # Ref metaseq/metaseq/modules/learned_positional_embedding.py
            if self.embed_positions is not None:
                self.embed_positions.padding_idx = None
        else:
            positions = None
        if self.embed_positions is not None:
            positions = self.embed_positions(
                tokens, incremental_state=incremental_state, positions=positions
            )

        # see IncrementalDecoder for important information about
        # incremental state
        if incremental_state:
            tokens = tokens[:, -1:]
            if positions is not None:
                positions = positions[:, -1:]

        if token_embedding is None:
            token_embedding = self.embed_tokens(tokens)

        x = embed = self.embed_scale * token_embedding

        if positions is not None:
            x += positions

        if self.dropout_module is not None:
            x = self.dropout_module(x)

        # Returning in T x B x C format as that makes integrating sequence parallelism easier.
        x = x.transpose(0, 1).contiguous()
        return x, embed, positions

    # forward for TransformerDecoder
    def forward(
        self,
        prev_output_tokens,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        features_only: bool = False,
        src_lengths: Optional[Any] = None,
        token_embeddings: Optional[torch.Tensor] = None,
        self_attn_padding_mask: Optional[Tensor] = None,
    ):
        x, extra = self.extract_features(
            prev_output_tokens,
            incremental_state=incremental_state,
            token_embeddings=token_embeddings,
            self_attn_padding_mask=self_attn_padding_mask,
        )
        if not features_only:
            x = self.output_layer(x)

        # Transposing back to B x T x C, so that the interface stays the same.
        x = x.transpose(0, 1).contiguous()
        return x, extra

    def extract_features(
        self,
        prev_output_tokens,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        token_embeddings: Optional[torch.Tensor] = None,
        self_attn_padding_mask: Optional[Tensor] = None,
    ):
        # compute self-attention padding mask (involves device-to-host transfer,
        # so put it at the top of the forward)
        if (
            self_attn_padding_mask is None
            and prev_output_tokens.eq(self.padding_idx).any()
        ):
            self_attn_padding_mask = prev_output_tokens.eq(self.padding_idx)

        # embed tokens and positions
        # x is T x B x C
        x, tok, pos = self.forward_embedding(
            prev_output_tokens, token_embeddings, incremental_state
        )

        if not incremental_state:
            self_attn_mask = self.buffered_future_mask(x, prev_output_tokens)
        else:
            self_attn_mask = None

        inner_states: List[Optional[Tensor]] = [{"tok": tok, "pos": pos, "emb": x}]
        for idx, layer in enumerate(self.layers):
            x = layer(
                x,
                incremental_state=incremental_state,
                self_attn_mask=self_attn_mask,
                self_attn_padding_mask=self_attn_padding_mask,
                recompute_fc1=(idx < getattr(self.args, "recompute_fc1_num_layers", 0)),
            )
        inner_states.append(x)

        if self.layer_norm is not None:
            x = self.layer_norm(x)

        return x, {"inner_states": inner_states}

    def output_layer(self, features):
        """Project features to the vocabulary size."""
        return self.output_projection(features)

    def max_positions(self):
        """Maximum output length supported by the decoder."""
        if self.embed_positions is None:
            return self.max_target_positions
        return min(self.max_target_positions, self.embed_positions.max_positions)

    def buffered_future_mask(self, tensor, input_tokens=None):
        cur_seq_len, batch_size = tensor.size(0), tensor.size(1)
        max_seq_len = self.max_positions()
        need_to_make_new_mask = (
            self._future_mask.size(0) == 0
            or (not self._future_mask.device == tensor.device)
            or self._future_mask.size(1) < max_seq_len
            or (
                self.use_alibi
                and self._future_mask.size(0)
                != (batch_size * self.args.decoder_attention_heads)
            )
            or (self.self_attn_doc_sep != UNSPECIFIED_DOC_SEP)
        )

        if need_to_make_new_mask:
            self._future_mask = torch.triu(
                fill_with_neg_inf(
                    torch.zeros([max_seq_len, max_seq_len], device=tensor.device)
                ),
                1,
            )
            if self.self_attn_doc_sep != UNSPECIFIED_DOC_SEP:
                # Code to accomodate dynamic attention when document seperator is used
                assert input_tokens is not None
                self._future_mask = self._future_mask[:cur_seq_len, :cur_seq_len]
                self._future_mask = self._future_mask.unsqueeze(0).repeat(
                    batch_size, 1, 1
                )
                doc_id_indices = (
                    (input_tokens == self.self_attn_doc_sep).nonzero().tolist()
                )
                # TODO: this is probably extremely slow
                for indices in doc_id_indices:
                    self._future_mask[
                        indices[0], indices[1] + 1 :, : indices[1] + 1
                    ] = float("-inf")

        self._future_mask = self._future_mask.to(tensor)
        if self.self_attn_doc_sep != UNSPECIFIED_DOC_SEP:
            return self._future_mask
        else:
            return self._future_mask[:cur_seq_len, :cur_seq_len]


class Args:
    dropout = 0.0
    decoder_embed_dim = 8
    decoder_attention_heads = 1
    decoder_layers = 2
    max_target_positions = 16
    no_scale_embedding = False
    alibi = False
    decoder_learned_pos = True
    self_attn_doc_sep = 2
    vocab_size = 12


def build_decoder(args=Args()):
    embed_tokens = nn.Embedding(args.vocab_size, args.decoder_embed_dim, padding_idx=1)
    return TransformerDecoder(args, embed_tokens)


def make():
    torch.manual_seed(0)
    decoder = build_decoder()
    two_docs = torch.tensor([[5, 6, 2, 7, 8, 9], [4, 2, 5, 2, 6, 7]])
    one_doc = torch.tensor([[5, 6, 7, 8, 9, 10], [4, 5, 6, 7, 8, 9]])
    padded = torch.tensor([[5, 6, 2, 7, 1, 1], [4, 5, 6, 7, 8, 9]])
    return decoder, [(two_docs,), (one_doc,), (padded,)]


decoder = torch.compile(build_decoder())
