"""RETRO decoder with chunked cross attention: an early return when the sequence is shorter than a chunk, causal shifting with negative F.pad, chunk-to-chunk reshapes, rotary embeddings and optional masks (no break expected).

Source: lucidrains/RETRO-pytorch@98cf7eeb8e4d0e3efc7b4144075c9cb07a96d5c7:retro_pytorch/retro_pytorch.py:1-330
Kept: helpers (exists, default, cast_tuple), RMSNorm, RotaryEmbedding,
rotate_half, apply_rotary_pos_emb, FeedForward, Attention, ChunkedCrossAttention
and Decoder with their control flow (the `n < self.chunk_size` early return,
the exists(mask)/exists(pos_emb)/self.causal branches, cross attention only on
dec_cross_attn_layers), and RETRO's decoder half of forward (token + absolute
position embedding, decode, logits).
Simplified: einops rearrange/repeat are written as view/reshape/transpose/
repeat; the retrieval encoder is dropped and the retrieved chunks arrive
already embedded; tiny sizes.
"""
import torch
import torch.nn.functional as F
from torch import nn, einsum

# constants

MIN_DIM_HEAD = 32

# helper functions

def exists(val):
    return val is not None

def default(val, d):
    return val if exists(val) else d

def cast_tuple(val, num = 1):
    return val if isinstance(val, tuple) else ((val,) * num)

# normalization

class RMSNorm(nn.Module):
    def __init__(
        self,
        dim,
        *,
        eps = 1e-8
    ):
        super().__init__()
        self.eps = eps
        self.scale = dim ** -0.5
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = x.norm(keepdim = True, dim = -1) * self.scale
        return (x / norm.clamp(min = self.eps)) * self.gamma

# positional embedding

class RotaryEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        inv_freq = 1. / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer('inv_freq', inv_freq)

    def forward(self, max_seq_len, *, device, offset = 0):
        seq = torch.arange(max_seq_len, device = device) + offset
        freqs = einsum('i , j -> i j', seq.type_as(self.inv_freq), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim = -1)
        return emb[None, None]

def rotate_half(x):
    x = x.reshape(*x.shape[:-1], 2, -1)
    x1, x2 = x.unbind(dim = -2)
    return torch.cat((-x2, x1), dim = -1)

def apply_rotary_pos_emb(t, freqs):
    seq_len, rot_dim = t.shape[-2], freqs.shape[-1]
    t, t_pass = t[..., :rot_dim], t[..., rot_dim:]
    t = (t * freqs.cos()) + (rotate_half(t) * freqs.sin())
    return torch.cat((t, t_pass), dim = -1)

# feedforward

def FeedForward(dim, mult = 4, dropout = 0.):
    inner_dim = int(mult * dim)

    return nn.Sequential(
        RMSNorm(dim),
        nn.Linear(dim, inner_dim),
        nn.GELU(),
        nn.Dropout(dropout),
        nn.Linear(inner_dim, dim)
    )

# attention

class Attention(nn.Module):
    def __init__(
        self,
        dim,
        *,
        dim_head = 64,
        heads = 8,
        causal = False,
        dropout = 0.
    ):
        super().__init__()
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.causal = causal
        inner_dim = dim_head * heads

        self.norm = RMSNorm(dim)
        self.dropout = nn.Dropout(dropout)

        self.to_q = nn.Linear(dim, inner_dim, bias = False)
        self.to_kv = nn.Linear(dim, inner_dim * 2, bias = False)
        self.to_out = nn.Linear(inner_dim, dim)

    def forward(self, x, mask = None, context = None, pos_emb = None):
        device, h, scale = x.device, self.heads, self.scale

        x = self.norm(x)
        kv_input = default(context, x)

        q = self.to_q(x)
        k, v = self.to_kv(kv_input).chunk(2, dim = -1)

        # split heads

        q, k, v = map(lambda t: t.reshape(t.shape[0], t.shape[1], h, -1).transpose(1, 2), (q, k, v))

        # scale

        q = q * scale

        # apply relative positional encoding (rotary embeddings)

        if exists(pos_emb):
            q_pos_emb, k_pos_emb = cast_tuple(pos_emb, num = 2)

            q = apply_rotary_pos_emb(q, q_pos_emb)
            k = apply_rotary_pos_emb(k, k_pos_emb)

        # derive query key similarities

        sim = einsum('b h i d, b h j d -> b h i j', q, k)

        # masking

        mask_value = -torch.finfo(sim.dtype).max

        if exists(mask):
            mask = mask[:, None, None, :]
            sim = sim.masked_fill(~mask, mask_value)

        if self.causal:
            i, j = sim.shape[-2:]
            causal_mask = torch.ones(i, j, device = device, dtype = torch.bool).triu(j - i + 1)
            sim = sim.masked_fill(causal_mask, mask_value)

        # attention

        attn = sim.softmax(dim = -1)

        attn = self.dropout(attn)

        # aggregate

        out = einsum('b h i j, b h j d -> b h i d', attn, v)

        # merge heads

        out = out.transpose(1, 2).reshape(out.shape[0], out.shape[2], -1)

        # combine heads linear out

        return self.to_out(out)


class ChunkedCrossAttention(nn.Module):
    def __init__(
        self,
        chunk_size,
        **kwargs
    ):
        super().__init__()
        self.chunk_size = chunk_size
        self.cross_attn = Attention(**kwargs)

    def forward(self, x, *, context_mask = None, context, pos_emb = None):
        # derive variables
        chunk_size = self.chunk_size

        b, n, num_chunks, num_retrieved = x.shape[0], x.shape[-2], *context.shape[-4:-2]

        # if sequence length less than chunk size, do an early return

        if n < self.chunk_size:
            return torch.zeros_like(x)

        # causal padding

        causal_padding = chunk_size - 1

        x = F.pad(x, (0, 0, -causal_padding, causal_padding), value = 0.)

        # take care of rotary positional embedding
        # make sure queries positions are properly shifted to the future

        q_pos_emb, k_pos_emb = pos_emb
        q_pos_emb = F.pad(q_pos_emb, (0, 0, -causal_padding, causal_padding), value = 0.)
        k_pos_emb = k_pos_emb.repeat(1, 1, num_retrieved, 1)
        pos_emb = (q_pos_emb, k_pos_emb)

        # reshape so we have chunk to chunk attention, without breaking causality

        x = x.reshape(b * num_chunks, -1, x.shape[-1])
        context = context.reshape(b * num_chunks, -1, context.shape[-1])

        if exists(context_mask):
            context_mask = context_mask.reshape(b * num_chunks, -1)

        # cross attention

        out = self.cross_attn(x, context = context, mask = context_mask, pos_emb = pos_emb)

        # reshape back to original sequence

        out = out.reshape(b, -1, out.shape[-1])

        # pad back to original, with 0s at the beginning (which will be added to the residual and be fine)

        out = F.pad(out, (0, 0, causal_padding, -causal_padding), value = 0.)
        return out

class Decoder(nn.Module):
    def __init__(
        self,
        dim,
        *,
        depth,
        heads = 8,
        dim_head = 64,
        attn_dropout = 0.,
        ff_mult = 4,
        ff_dropout = 0.,
        final_norm = True,
        cross_attn_layers = None,
        chunk_size = 64
    ):
        super().__init__()
        self.layers = nn.ModuleList([])

        rotary_emb_dim = max(dim_head // 2, MIN_DIM_HEAD)
        self.rotary_pos_emb = RotaryEmbedding(rotary_emb_dim)
        self.chunk_size = chunk_size

        for layer_num in range(1, depth + 1):
            has_cross_attn = not exists(cross_attn_layers) or layer_num in cross_attn_layers

            self.layers.append(nn.ModuleList([
                Attention(dim = dim, dim_head = dim_head, heads = heads, dropout = attn_dropout, causal = True),
                ChunkedCrossAttention(chunk_size = chunk_size, dim = dim, dim_head = dim_head, heads = heads, dropout = attn_dropout) if has_cross_attn else None,
                FeedForward(dim = dim, mult = ff_mult, dropout = ff_dropout),
            ]))

        self.norm_out = RMSNorm(dim) if final_norm else nn.Identity()

    def forward(self, x, *, context_mask = None, retrieved):
        device, seq_len, num_chunks, num_neighbors, chunk_size = x.device, x.shape[-2], *retrieved.shape[-4:-1]
        seq_chunk_size = seq_len // num_chunks

        self_attn_pos_emb = self.rotary_pos_emb(seq_len, device = device)

        cross_attn_q_pos_emb = self.rotary_pos_emb(seq_chunk_size, device = device, offset = self.chunk_size - 1)  # need to add extra chunk size, since it will be shifted
        cross_attn_k_pos_emb = self.rotary_pos_emb(chunk_size, device = device)

        cross_attn_pos_emb = (cross_attn_q_pos_emb, cross_attn_k_pos_emb)

        for attn, cross_attn, ff in self.layers:
            x = attn(x, pos_emb = self_attn_pos_emb) + x

            if exists(cross_attn):
                x = cross_attn(
                    x,
                    context = retrieved,
                    context_mask = context_mask,
                    pos_emb = cross_attn_pos_emb
                ) + x

            x = ff(x) + x

        return self.norm_out(x)


class RETRODecoderLM(nn.Module):
    def __init__(self, *, num_tokens, max_seq_len = 32, dec_dim = 16, dec_depth = 2, dec_cross_attn_layers = (1,), heads = 2, dim_head = 32, chunk_size = 4):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dec_dim)
        self.pos_emb = nn.Embedding(max_seq_len, dec_dim)
        self.chunk_size = chunk_size
        self.decoder = Decoder(
            dim = dec_dim,
            depth = dec_depth,
            heads = heads,
            dim_head = dim_head,
            cross_attn_layers = dec_cross_attn_layers,
            chunk_size = chunk_size
        )
        self.to_logits = nn.Linear(dec_dim, num_tokens)

    def forward(self, seq, retrieved, mask = None):
        n, device = seq.shape[-1], seq.device

        embed = self.token_emb(seq)

        # get absolute positional embedding

        pos_emb = self.pos_emb(torch.arange(n, device = device))
        embed = embed + pos_emb[None]

        decoder_retrieved_mask = None

        if exists(mask):
            decoder_retrieved_mask = mask

        embed = self.decoder(embed, context_mask = decoder_retrieved_mask, retrieved = retrieved)

        return self.to_logits(embed)


def build_model():
    return RETRODecoderLM(num_tokens = 20)


retro = torch.compile(build_model().eval())


def make():
    torch.manual_seed(0)
    model = build_model().eval()
    seq = torch.randint(0, 20, (2, 8))
    # b k r n d: 2 chunks of 4 tokens, 2 neighbours of 4 tokens each, already embedded
    retrieved = torch.randn(2, 2, 2, 4, 16)
    mask = torch.ones(2, 2, 2, 4, dtype=torch.bool)
    mask[:, :, 1, 2:] = False
    short_seq = torch.randint(0, 20, (2, 2))
    short_retrieved = torch.randn(2, 1, 2, 4, 16)
    return model, [(seq, retrieved), (seq, retrieved, mask), (short_seq, short_retrieved)]
