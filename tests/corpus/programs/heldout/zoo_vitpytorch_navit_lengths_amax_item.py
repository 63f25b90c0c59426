"""vit-pytorch NaViT: packs variable-resolution images into sequences, builds image ids with `torch.repeat_interleave(arange(n), torch.tensor(patch_counts))`, a padding mask from `lengths.amax().item()`, pooling queries from `num_images.amax().item()`, and keeps real images with `x[is_images]`.

Source: lucidrains/vit-pytorch@69d24fe9e3024c0d4b02761123b8583a24ebed1e:vit_pytorch/na_vit.py:1-420
Kept: helpers, the lru_cache'd posemb_grid, group_images_by_max_seq_len, the
bias-free LayerNorm, RMSNorm, FeedForward, Attention with the mask/attn_mask
combination and SDPA, Transformer, NaViT's constructor and forward verbatim (group
switch, List[Tensor] -> List[List[Tensor]] wrap, patch_dims asserts, token dropout
branch, repeat_interleave image ids, pad_sequence partial, factorized positions,
attention pooling and the final boolean-mask read).
Simplified: einops rearrange/repeat become reshape/permute/expand/unsqueeze;
token_dropout_prob left at None; images of 8x8 and 4x8 with patch 4, dim 16,
2 heads of 8, depth 1.
"""
from __future__ import annotations

from functools import partial, lru_cache
from typing import List

import torch
import torch.nn.functional as F
from torch import nn, Tensor
from torch.nn.utils.rnn import pad_sequence as orig_pad_sequence

# helpers

def exists(val):
    return val is not None

def default(val, d):
    return val if exists(val) else d

def always(val):
    return lambda *args: val

def pair(t):
    return t if isinstance(t, tuple) else (t, t)

def divisible_by(numer, denom):
    return (numer % denom) == 0

@lru_cache(maxsize=128)
def posemb_grid(ph, pw, device):
    h_idx = torch.arange(ph, device=device).repeat_interleave(pw)
    w_idx = torch.arange(pw, device=device).repeat(ph)
    return torch.stack([h_idx, w_idx], dim=-1)

# auto grouping images

def group_images_by_max_seq_len(
    images: List[Tensor],
    patch_size: int,
    calc_token_dropout = None,
    max_seq_len = 2048

) -> List[List[Tensor]]:

    calc_token_dropout = default(calc_token_dropout, always(0.))

    groups = []
    group = []
    seq_len = 0

    if isinstance(calc_token_dropout, (float, int)):
        calc_token_dropout = always(calc_token_dropout)

    for image in images:
        assert isinstance(image, Tensor)

        image_dims = image.shape[-2:]
        ph, pw = map(lambda t: t // patch_size, image_dims)

        image_seq_len = (ph * pw)
        image_seq_len = int(image_seq_len * (1 - calc_token_dropout(*image_dims)))

        assert image_seq_len <= max_seq_len, f'image with dimensions {image_dims} exceeds maximum sequence length'

        if (seq_len + image_seq_len) > max_seq_len:
            groups.append(group)
            group = []
            seq_len = 0

        group.append(image)
        seq_len += image_seq_len

    if len(group) > 0:
        groups.append(group)

    return groups

# normalization
# they use layernorm without bias, something that pytorch does not offer

class LayerNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))
        self.register_buffer('beta', torch.zeros(dim))

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.gamma, self.beta)

class RMSNorm(nn.Module):
    def __init__(self, heads, dim):
        super().__init__()
        self.scale = dim ** 0.5
        self.gamma = nn.Parameter(torch.ones(heads, 1, dim))

    def forward(self, x):
        normed = F.normalize(x, dim = -1)
        return normed * self.scale * self.gamma

# feedforward

def FeedForward(dim, hidden_dim, dropout = 0.):
    return nn.Sequential(
        LayerNorm(dim),
        nn.Linear(dim, hidden_dim),
        nn.GELU(),
        nn.Dropout(dropout),
        nn.Linear(hidden_dim, dim),
        nn.Dropout(dropout)
    )

class Attention(nn.Module):
    def __init__(self, dim, heads = 8, dim_head = 64, dropout = 0.):
        super().__init__()
        inner_dim = dim_head *  heads
        self.heads = heads
        self.norm = LayerNorm(dim)

        self.q_norm = RMSNorm(heads, dim_head)
        self.k_norm = RMSNorm(heads, dim_head)

        self.dropout_p = dropout

        self.to_q = nn.Linear(dim, inner_dim, bias = False)
        self.to_kv = nn.Linear(dim, inner_dim * 2, bias = False)

        self.to_out = nn.Sequential(
            nn.Linear(inner_dim, dim, bias = False),
            nn.Dropout(dropout)
        )

    def forward(
        self,
        x,
        context = None,
        mask = None,
        attn_mask = None
    ):
        x = self.norm(x)
        kv_input = default(context, x)

        qkv = (self.to_q(x), *self.to_kv(kv_input).chunk(2, dim = -1))

        q, k, v = map(lambda t: t.reshape(t.shape[0], t.shape[1], self.heads, -1).transpose(1, 2), qkv)

        q = self.q_norm(q)
        k = self.k_norm(k)

        # combine masks if both exist
        if exists(mask) or exists(attn_mask):
            if exists(mask):
                mask = mask[:, None, None, :]
            if exists(mask) and exists(attn_mask):
                attn_mask = mask & attn_mask
            elif exists(mask):
                attn_mask = mask

        out = F.scaled_dot_product_attention(
            q, k, v,
            attn_mask = attn_mask,
            dropout_p = self.dropout_p if self.training else 0.,
            scale = 1.  # RMSNorm already includes sqrt(dim) scaling
        )

        out = out.transpose(1, 2).reshape(out.shape[0], out.shape[2], -1)
        return self.to_out(out)

class Transformer(nn.Module):
    def __init__(self, dim, depth, heads, dim_head, mlp_dim, dropout = 0.):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                Attention(dim, heads = heads, dim_head = dim_head, dropout = dropout),
                FeedForward(dim, mlp_dim, dropout = dropout)
            ]))

        self.norm = LayerNorm(dim)

    def forward(
        self,
        x,
        mask = None,
        attn_mask = None
    ):
        for attn, ff in self.layers:
            x = attn(x, mask = mask, attn_mask = attn_mask) + x
            x = ff(x) + x

        return self.norm(x)

class NaViT(nn.Module):
    def __init__(self, *, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, channels = 3, dim_head = 64, dropout = 0., emb_dropout = 0., token_dropout_prob = None):
        super().__init__()
        image_height, image_width = pair(image_size)

        self.calc_token_dropout = None

        if callable(token_dropout_prob):
            self.calc_token_dropout = token_dropout_prob

        elif isinstance(token_dropout_prob, (float, int)):
            assert 0. <= token_dropout_prob < 1.
            token_dropout_prob = float(token_dropout_prob)
            self.calc_token_dropout = lambda height, width: token_dropout_prob

        # calculate patching related stuff

        assert divisible_by(image_height, patch_size) and divisible_by(image_width, patch_size), 'Image dimensions must be divisible by the patch size.'

        patch_height_dim, patch_width_dim = (image_height // patch_size), (image_width // patch_size)
        patch_dim = channels * (patch_size ** 2)

        self.channels = channels
        self.patch_size = patch_size

        self.to_patch_embedding = nn.Sequential(
            LayerNorm(patch_dim),
            nn.Linear(patch_dim, dim),
            LayerNorm(dim),
        )

        self.pos_embed_height = nn.Parameter(torch.randn(patch_height_dim, dim))
        self.pos_embed_width = nn.Parameter(torch.randn(patch_width_dim, dim))

        self.dropout = nn.Dropout(emb_dropout)

        self.transformer = Transformer(dim, depth, heads, dim_head, mlp_dim, dropout)

        # final attention pooling queries

        self.attn_pool_queries = nn.Parameter(torch.randn(dim))
        self.attn_pool = Attention(dim = dim, dim_head = dim_head, heads = heads)

        # output to logits

        self.to_latent = nn.Identity()

        self.mlp_head = nn.Sequential(
            LayerNorm(dim),
            nn.Linear(dim, num_classes, bias = False)
        )

    @property
    def device(self):
        return next(self.parameters()).device

    def forward(
        self,
        batched_images: List[Tensor] | List[List[Tensor]], # assume different resolution images already grouped correctly
        group_images = False,
        group_max_seq_len = 2048
    ):
        p, c, device, has_token_dropout = self.patch_size, self.channels, self.device, exists(self.calc_token_dropout) and self.training

        arange = partial(torch.arange, device = device)
        pad_sequence = partial(orig_pad_sequence, batch_first = True)

        # auto pack if specified

        if group_images:
            batched_images = group_images_by_max_seq_len(
                batched_images,
                patch_size = self.patch_size,
                calc_token_dropout = self.calc_token_dropout if self.training else None,
                max_seq_len = group_max_seq_len
            )

        # if List[Tensor] is not grouped -> List[List[Tensor]]

        if torch.is_tensor(batched_images[0]):
            batched_images = [batched_images]

        # process images into variable lengthed sequences with attention mask

        num_images = []
        batched_sequences = []
        batched_positions = []
        batched_image_ids = []

        for images in batched_images:
            num_images.append(len(images))

            # compute patch dimensions for all images
            patch_dims = []
            for image in images:
                assert image.ndim == 3 and image.shape[0] == c
                image_dims = image.shape[-2:]
                assert all([divisible_by(dim, p) for dim in image_dims]), f'height and width {image_dims} of images must be divisible by patch size {p}'
                patch_dims.append((image_dims[0] // p, image_dims[1] // p))

            # extract patches for all images: 'c (h p1) (w p2) -> (h w) (c p1 p2)'
            sequences = [img.reshape(c, img.shape[1] // p, p, img.shape[2] // p, p).permute(1, 3, 0, 2, 4).reshape(-1, c * p * p) for img in images]

            # compute positions - uses lru_cache to avoid redundant computation across forward passes
            positions = [posemb_grid(ph, pw, device) for ph, pw in patch_dims]

            # handle token dropout
            if has_token_dropout:
                for i, (seq, pos) in enumerate(zip(sequences, positions)):
                    image_dims = images[i].shape[-2:]
                    token_dropout = self.calc_token_dropout(*image_dims)
                    seq_len = seq.shape[0]
                    num_keep = max(1, int(seq_len * (1 - token_dropout)))
                    keep_indices = torch.randn((seq_len,), device=device).topk(num_keep, dim=-1).indices
                    sequences[i] = seq[keep_indices]
                    positions[i] = pos[keep_indices]

            # build image_ids efficiently using repeat_interleave
            patch_counts = [seq.shape[0] for seq in sequences]
            image_ids = torch.repeat_interleave(
                arange(len(images)),
                torch.tensor(patch_counts, device=device)
            )

            batched_image_ids.append(image_ids)
            batched_sequences.append(torch.cat(sequences, dim=0))
            batched_positions.append(torch.cat(positions, dim=0))

        # derive key padding mask

        lengths = torch.tensor([seq.shape[-2] for seq in batched_sequences], device = device, dtype = torch.long)
        seq_arange = arange(lengths.amax().item())
        key_pad_mask = seq_arange[None, :] < lengths[:, None]

        # derive attention mask, and combine with key padding mask from above

        batched_image_ids = pad_sequence(batched_image_ids)
        attn_mask = batched_image_ids[:, None, :, None] == batched_image_ids[:, None, None, :]
        attn_mask = attn_mask & key_pad_mask[:, None, None, :]

        # combine patched images as well as the patched width / height positions for 2d positional embedding

        patches = pad_sequence(batched_sequences)
        patch_positions = pad_sequence(batched_positions)

        # need to know how many images for final attention pooling

        num_images = torch.tensor(num_images, device = device, dtype = torch.long)

        # to patches

        x = self.to_patch_embedding(patches)

        # factorized 2d absolute positional embedding

        h_indices, w_indices = patch_positions.unbind(dim = -1)

        h_pos = self.pos_embed_height[h_indices]
        w_pos = self.pos_embed_width[w_indices]

        x = x + h_pos + w_pos

        # embed dropout

        x = self.dropout(x)

        # attention

        x = self.transformer(x, attn_mask = attn_mask)

        # do attention pooling at the end

        max_queries = num_images.amax().item()

        queries = self.attn_pool_queries.expand(x.shape[0], max_queries, -1)

        # attention pool mask

        image_id_arange = arange(max_queries)

        attn_pool_mask = image_id_arange[:, None] == batched_image_ids[:, None, :]

        attn_pool_mask = attn_pool_mask & key_pad_mask[:, None, :]

        attn_pool_mask = attn_pool_mask[:, None]

        # attention pool

        x = self.attn_pool(queries, context = x, attn_mask = attn_pool_mask) + queries

        x = x.reshape(-1, x.shape[-1])

        # each batch element may not have same amount of images

        is_images = image_id_arange < num_images[:, None]
        is_images = is_images.reshape(-1)

        x = x[is_images]

        # project out to logits

        x = self.to_latent(x)

        return self.mlp_head(x)


def build_navit():
    return NaViT(
        image_size = 8,
        patch_size = 4,
        num_classes = 5,
        dim = 16,
        depth = 1,
        heads = 2,
        dim_head = 8,
        mlp_dim = 32,
        dropout = 0.,
        emb_dropout = 0.,
    )


v = torch.compile(build_navit())


def make():
    torch.manual_seed(0)
    images = [
        [torch.randn(3, 8, 8), torch.randn(3, 4, 8)],
        [torch.randn(3, 8, 4)],
    ]
    flat = [torch.randn(3, 8, 8), torch.randn(3, 4, 4), torch.randn(3, 8, 4)]
    return build_navit(), [(images,), (flat, True, 6)]
