"""fairseq Transformer decoder: `prev_output_tokens.eq(self.padding_idx).any()` picks the self-attention padding mask, and LayerDropModuleList.__iter__ draws per-layer drop probabilities.

Source: facebookresearch/fairseq@0e86c2b696f4a4ac933ca4ca99491da93f337c66:fairseq/models/transformer/transformer_decoder.py:260-395
Also: fairseq/modules/layer_drop.py:13-44 (LayerDropModuleList),
fairseq/utils.py (fill_with_neg_inf), fairseq/modules/fairseq_dropout.py.
Kept: extract_features/extract_features_scriptable as written (encoder_out
dict plumbing, incremental_state slicing, alignment layer), output_layer,
buffered_future_mask's cache, LayerDropModuleList used when
decoder_layerdrop > 0.
Simplified: the decoder layer is pre-norm self/cross attention built on
nn.MultiheadAttention and returns (x, attn, None); no positions, quant noise,
adaptive softmax or project in/out dims; 2 layers, embed 8.
"""
from typing import Dict, List, Optional

import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


def fill_with_neg_inf(t):
    """FP16-compatible function that fills a tensor with -inf."""
    return t.float().fill_(float("-inf")).type_as(t)


class FairseqDropout(nn.Module):
    def __init__(self, p, module_name=None):
        super().__init__()
        self.p = p
        self.module_name = module_name
        self.apply_during_inference = False

    def forward(self, x, inplace: bool = False):
        if self.p > 0 and (self.training or self.apply_during_inference):
            return F.dropout(x, p=self.p, training=True, inplace=inplace)
        else:
            return x


class LayerDropModuleList(nn.ModuleList):
    """A LayerDrop implementation based on :class:`torch.nn.ModuleList`."""

    def __init__(self, p, modules=None):
        super().__init__(modules)
        self.p = p

    def __iter__(self):
        dropout_probs = torch.empty(len(self)).uniform_()
        for i, m in enumerate(super().__iter__()):
            if not self.training or (dropout_probs[i] > self.p):
                yield m


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        embed_dim = cfg.decoder_embed_dim
        self.self_attn = nn.MultiheadAttention(embed_dim, cfg.decoder_attention_heads)
        self.self_attn_layer_norm = nn.LayerNorm(embed_dim)
        self.encoder_attn = nn.MultiheadAttention(embed_dim, cfg.decoder_attention_heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, 2 * embed_dim)
        self.fc2 = nn.Linear(2 * embed_dim, embed_dim)
        self.final_layer_norm = nn.LayerNorm(embed_dim)

    def forward(self, x, encoder_out=None, encoder_padding_mask=None, incremental_state=None,
                self_attn_mask=None, self_attn_padding_mask=None, need_attn=False, need_head_weights=False):
        residual = x
        x = self.self_attn_layer_norm(x)
        x, _ = self.self_attn(x, x, x, key_padding_mask=self_attn_padding_mask, attn_mask=self_attn_mask,
                              need_weights=False)
        x = residual + x
        attn = None
        if encoder_out is not None:
            residual = x
            x = self.encoder_attn_layer_norm(x)
            x, attn = self.encoder_attn(x, encoder_out, encoder_out, key_padding_mask=encoder_padding_mask,
                                        need_weights=need_attn or (not self.training),
                                        average_attn_weights=not need_head_weights)
            x = residual + x
        residual = x
        x = self.final_layer_norm(x)
        x = self.fc2(F.relu(self.fc1(x)))
        x = residual + x
        return x, attn, None


class TransformerDecoderBase(nn.Module):
    def __init__(self, cfg, embed_tokens):
        super().__init__()
        self.cfg = cfg
        self._future_mask = torch.empty(0)
        self.dropout_module = FairseqDropout(cfg.dropout, module_name="TransformerDecoder")
        self.decoder_layerdrop = cfg.decoder_layerdrop
        self.padding_idx = embed_tokens.padding_idx
        self.embed_tokens = embed_tokens
        self.embed_scale = 1.0 if cfg.no_scale_embedding else math.sqrt(cfg.decoder_embed_dim)
        self.cross_self_attention = cfg.cross_self_attention
        self.quant_noise = None
        self.project_in_dim = None
        self.project_out_dim = None
        self.embed_positions = None
        self.layernorm_embedding = None
        self.adaptive_softmax = None

        if self.decoder_layerdrop > 0.0:
            self.layers = LayerDropModuleList(p=self.decoder_layerdrop)
        else:
            self.layers = nn.ModuleList([])
        self.layers.extend([DecoderLayer(cfg) for _ in range(cfg.decoder_layers)])
        self.num_layers = len(self.layers)
        self.layer_norm = nn.LayerNorm(cfg.decoder_embed_dim) if cfg.decoder_normalize_before else None
        self.output_projection = nn.Linear(cfg.decoder_embed_dim, embed_tokens.num_embeddings, bias=False)

    def forward(
        self,
        prev_output_tokens,
        encoder_out: Optional[Dict[str, List[Tensor]]] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        features_only: bool = False,
        full_context_alignment: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
    ):
        x, extra = self.extract_features(
            prev_output_tokens,
            encoder_out=encoder_out,
            incremental_state=incremental_state,
            full_context_alignment=full_context_alignment,
            alignment_layer=alignment_layer,
            alignment_heads=alignment_heads,
        )

        if not features_only:
            x = self.output_layer(x)
        return x, extra

    def extract_features(
        self,
        prev_output_tokens,
        encoder_out: Optional[Dict[str, List[Tensor]]],
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        full_context_alignment: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
    ):
        return self.extract_features_scriptable(
            prev_output_tokens,
            encoder_out,
            incremental_state,
            full_context_alignment,
            alignment_layer,
            alignment_heads,
        )

    def extract_features_scriptable(
        self,
        prev_output_tokens,
        encoder_out: Optional[Dict[str, List[Tensor]]],
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        full_context_alignment: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
    ):
        bs, slen = prev_output_tokens.size()
        if alignment_layer is None:
            alignment_layer = self.num_layers - 1

        enc: Optional[Tensor] = None
        padding_mask: Optional[Tensor] = None
        if encoder_out is not None and len(encoder_out["encoder_out"]) > 0:
            enc = encoder_out["encoder_out"][0]
        if encoder_out is not None and len(encoder_out["encoder_padding_mask"]) > 0:
            padding_mask = encoder_out["encoder_padding_mask"][0]

        # embed positions
        positions = None
        if self.embed_positions is not None:
            positions = self.embed_positions(prev_output_tokens, incremental_state=incremental_state)

        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
            if positions is not None:
                positions = positions[:, -1:]

        # Prevent torchscript exporting issue for dynamic quant embedding
        prev_output_tokens = prev_output_tokens.contiguous()
        # embed tokens and positions
        x = self.embed_scale * self.embed_tokens(prev_output_tokens)

        if self.quant_noise is not None:
            x = self.quant_noise(x)

        if self.project_in_dim is not None:
            x = self.project_in_dim(x)

        if positions is not None:
            x += positions

        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)

        x = self.dropout_module(x)

        # B x T x C -> T x B x C
        x = x.transpose(0, 1)

        self_attn_padding_mask: Optional[Tensor] = None
        if self.cross_self_attention or prev_output_tokens.eq(self.padding_idx).any():
            self_attn_padding_mask = prev_output_tokens.eq(self.padding_idx)

        # decoder layers
        attn: Optional[Tensor] = None
        inner_states: List[Optional[Tensor]] = [x]

        for idx, layer in enumerate(self.layers):
            if incremental_state is None and not full_context_alignment:
                self_attn_mask = self.buffered_future_mask(x)
            else:
                self_attn_mask = None

            x, layer_attn, _ = layer(
                x,
                enc,
                padding_mask,
                incremental_state,
                self_attn_mask=self_attn_mask,
                self_attn_padding_mask=self_attn_padding_mask,
                need_attn=bool((idx == alignment_layer)),
                need_head_weights=bool((idx == alignment_layer)),
            )

            inner_states.append(x)
            if layer_attn is not None and idx == alignment_layer:
                attn = layer_attn.float().to(x)

        if attn is not None:
            if alignment_heads is not None:
                attn = attn[:alignment_heads]

            # average probabilities over heads
            attn = attn.mean(dim=0)

        if self.layer_norm is not None:
            x = self.layer_norm(x)

        # T x B x C -> B x T x C
        x = x.transpose(0, 1)

        if self.project_out_dim is not None:
            x = self.project_out_dim(x)

        return x, {"attn": [attn], "inner_states": inner_states}

    def output_layer(self, features):
        """Project features to the vocabulary size."""
        if self.adaptive_softmax is None:
            # project back to size of vocabulary
            return self.output_projection(features)
        else:
            return features

    def buffered_future_mask(self, tensor):
        dim = tensor.size(0)
        # self._future_mask.device != tensor.device is not working in TorchScript. This is a workaround.
        if (
            self._future_mask.size(0) == 0
            or (not self._future_mask.device == tensor.device)
            or self._future_mask.size(0) < dim
        ):
            self._future_mask = torch.triu(fill_with_neg_inf(torch.zeros([dim, dim])), 1)
        self._future_mask = self._future_mask.to(tensor)
        return self._future_mask[:dim, :dim]


class DecoderConfig:
    dropout = 0.1
    decoder_layerdrop = 0.2
    decoder_embed_dim = 8
    decoder_attention_heads = 2
    decoder_layers = 2
    decoder_normalize_before = True
    no_scale_embedding = False
    cross_self_attention = False


def build_decoder(cfg=DecoderConfig()):
    embed_tokens = nn.Embedding(12, cfg.decoder_embed_dim, padding_idx=1)
    return TransformerDecoderBase(cfg, embed_tokens)


def make():
    torch.manual_seed(0)
    decoder = build_decoder()
    enc = torch.randn(5, 2, 8)
    encoder_out = {"encoder_out": [enc], "encoder_padding_mask": [torch.tensor([[False] * 5, [False] * 3 + [True] * 2])]}
    padded = torch.tensor([[2, 5, 6, 7], [2, 8, 1, 1]])
    full = torch.tensor([[2, 5, 6, 7], [2, 8, 9, 4]])
    return decoder, [(padded, encoder_out), (full, encoder_out), (full, None, None, True)]


compiled_decoder = torch.compile(build_decoder(), dynamic=False)
