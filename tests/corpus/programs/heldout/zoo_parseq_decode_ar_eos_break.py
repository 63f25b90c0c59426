"""PARSeq autoregressive decoding: greedy steps stop early when every sequence has emitted <eos> (`if testing and (tgt_in == self.eos_id).any(dim=-1).all(): break`), then cloze refinement.

Source: baudm/parseq@0464a07f7f6da7e02ac432d5773f47a8b781cba4:strhub/models/parseq/system.py:85-158
Kept: PARSeq.decode and PARSeq.forward verbatim (testing flag from
`max_length is None`, the decode_ar loop with its early break, the refine_iters
loop with the cloze mask and the eos-cumsum padding mask), the pos_queries
parameter, the head that does not predict <bos>/<pad>.
Simplified: the ViT encoder is one patch-embedding linear layer; the decoder is
a single nn.TransformerDecoderLayer-style block built from nn.MultiheadAttention
with the same (query, content, memory, masks) call signature; the tokenizer is
reduced to its special ids; no Lightning plumbing.
"""
from typing import Optional

import torch
import torch.nn as nn
from torch import Tensor


class TokenEmbedding(nn.Module):
    def __init__(self, charset_size: int, embed_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(charset_size, embed_dim)
        self.embed_dim = embed_dim

    def forward(self, tokens: torch.Tensor):
        return (self.embed_dim ** 0.5) * self.embedding(tokens)


class Encoder(nn.Module):
    def __init__(self, img_size, patch_size, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Linear(patch_size[0] * patch_size[1] * 3, embed_dim)

    def forward(self, img):
        p0, p1 = self.patch_size
        x = img.unfold(2, p0, p0).unfold(3, p1, p1)
        x = x.permute(0, 2, 3, 1, 4, 5).flatten(3).flatten(1, 2)
        return self.proj(x)


class Decoder(nn.Module):
    def __init__(self, embed_dim, num_heads, norm):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        self.norm = norm

    def forward(self, query, content, memory, query_mask: Optional[Tensor] = None,
                content_mask: Optional[Tensor] = None, content_key_padding_mask: Optional[Tensor] = None):
        query = query + self.self_attn(query, content, content, attn_mask=query_mask,
                                       key_padding_mask=content_key_padding_mask)[0]
        query = query + self.cross_attn(query, memory, memory)[0]
        return self.norm(query)


class PARSeq(nn.Module):

    def __init__(self, max_label_length: int, img_size, patch_size, embed_dim: int, dec_num_heads: int,
                 decode_ar: bool, refine_iters: int, dropout: float, charset_size: int = 8) -> None:
        super().__init__()
        # tokenizer special ids: <eos>=0, then characters, then <bos>, <pad>
        self.eos_id = 0
        self.bos_id = charset_size - 2
        self.pad_id = charset_size - 1
        self._device = torch.device("cpu")

        self.max_label_length = max_label_length
        self.decode_ar = decode_ar
        self.refine_iters = refine_iters

        self.encoder = Encoder(img_size, patch_size, embed_dim=embed_dim)
        self.decoder = Decoder(embed_dim, dec_num_heads, norm=nn.LayerNorm(embed_dim))

        # We don't predict <bos> nor <pad>
        self.head = nn.Linear(embed_dim, charset_size - 2)
        self.text_embed = TokenEmbedding(charset_size, embed_dim)

        # +1 for <eos>
        self.pos_queries = nn.Parameter(torch.Tensor(1, max_label_length + 1, embed_dim))
        self.dropout = nn.Dropout(p=dropout)
        nn.init.trunc_normal_(self.pos_queries, std=.02)

    def encode(self, img: torch.Tensor):
        return self.encoder(img)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, tgt_mask: Optional[Tensor] = None,
               tgt_padding_mask: Optional[Tensor] = None, tgt_query: Optional[Tensor] = None,
               tgt_query_mask: Optional[Tensor] = None):
        N, L = tgt.shape
        # <bos> stands for the null context. We only supply position information for characters after <bos>.
        null_ctx = self.text_embed(tgt[:, :1])
        tgt_emb = self.pos_queries[:, :L - 1] + self.text_embed(tgt[:, 1:])
        tgt_emb = self.dropout(torch.cat([null_ctx, tgt_emb], dim=1))
        if tgt_query is None:
            tgt_query = self.pos_queries[:, :L].expand(N, -1, -1)
        tgt_query = self.dropout(tgt_query)
        return self.decoder(tgt_query, tgt_emb, memory, tgt_query_mask, tgt_mask, tgt_padding_mask)

    def forward(self, images: Tensor, max_length: Optional[int] = None) -> Tensor:
        testing = max_length is None
        max_length = self.max_label_length if max_length is None else min(max_length, self.max_label_length)
        bs = images.shape[0]
        # +1 for <eos> at end of sequence.
        num_steps = max_length + 1
        memory = self.encode(images)

        # Query positions up to `num_steps`
        pos_queries = self.pos_queries[:, :num_steps].expand(bs, -1, -1)

        # Special case for the forward permutation. Faster than using `generate_attn_masks()`
        tgt_mask = query_mask = torch.triu(torch.full((num_steps, num_steps), float('-inf'), device=self._device), 1)

        if self.decode_ar:
            tgt_in = torch.full((bs, num_steps), self.pad_id, dtype=torch.long, device=self._device)
            tgt_in[:, 0] = self.bos_id

            logits = []
            for i in range(num_steps):
                j = i + 1  # next token index
                tgt_out = self.decode(tgt_in[:, :j], memory, tgt_mask[:j, :j], tgt_query=pos_queries[:, i:j],
                                      tgt_query_mask=query_mask[i:j, :j])
                # the next token probability is in the output's ith token position
                p_i = self.head(tgt_out)
                logits.append(p_i)
                if j < num_steps:
                    # greedy decode. add the next token index to the target input
                    tgt_in[:, j] = p_i.squeeze().argmax(-1)
                    # Efficient batch decoding: If all output words have at least one EOS token, end decoding.
                    if testing and (tgt_in == self.eos_id).any(dim=-1).all():
                        break

            logits = torch.cat(logits, dim=1)
        else:
            # No prior context, so input is just <bos>. We query all positions.
            tgt_in = torch.full((bs, 1), self.bos_id, dtype=torch.long, device=self._device)
            tgt_out = self.decode(tgt_in, memory, tgt_query=pos_queries)
            logits = self.head(tgt_out)

        if self.refine_iters:
            # For iterative refinement, we always use a 'cloze' mask.
            query_mask[torch.triu(torch.ones(num_steps, num_steps, dtype=torch.bool, device=self._device), 2)] = 0
            bos = torch.full((bs, 1), self.bos_id, dtype=torch.long, device=self._device)
            for i in range(self.refine_iters):
                # Prior context is the previous output.
                tgt_in = torch.cat([bos, logits[:, :-1].argmax(-1)], dim=1)
                tgt_padding_mask = ((tgt_in == self.eos_id).cumsum(-1) > 0)  # mask tokens beyond the first EOS token.
                tgt_out = self.decode(tgt_in, memory, tgt_mask, tgt_padding_mask,
                                      tgt_query=pos_queries, tgt_query_mask=query_mask[:, :tgt_in.shape[1]])
                logits = self.head(tgt_out)

        return logits


def build_parseq() -> PARSeq:
    return PARSeq(max_label_length=5, img_size=(8, 16), patch_size=(4, 4), embed_dim=16, dec_num_heads=2,
                  decode_ar=True, refine_iters=1, dropout=0.1)


model = torch.compile(build_parseq().eval())


def make():
    torch.manual_seed(0)
    m = build_parseq().eval()
    # A small <eos> bias: some images end every sequence at the first step (the
    # early break), others decode all steps.
    with torch.no_grad():
        m.head.bias[0] = 0.2
    long_images = torch.randn(2, 3, 8, 16, generator=torch.Generator().manual_seed(0)) * 3
    short_images = torch.randn(2, 3, 8, 16, generator=torch.Generator().manual_seed(1)) * 3
    return m, [(long_images,), (short_images,), (long_images, 3)]
