"""MuLaN AudioSpectrogramTransformer: crops the spectrogram to the patch grid (warning through a `once`-wrapped `print` when it must crop), 2-d sincos positions, training-only patch dropout by random top-k, dynamic relative position bias.

Source: lucidrains/musiclm-pytorch@4a78b41feab25d0ad0f4a1be8ea46b0aaf83d23a:musiclm_pytorch/musiclm_pytorch.py:36-538
Kept: once/print_once, round_down_nearest_multiple, posemb_sincos_2d, LayerNorm, GEGLU,
FeedForward, Attention (qk rmsnorm, rel_pos_bias), Transformer(return_all_layers) and
AudioSpectrogramTransformer.forward from the accept_spec input on (crop, patches, grid,
patch dropout with `int(n * (1 - p))` and topk indices, relative-distance MLP, mean pool).
Simplified: only accept_spec=True (no torchaudio Spectrogram, no SpecAugment); einops
Rearrange/rearrange/repeat/reduce written as view/permute/expand/mean; dim 16, depth 2,
2 heads, patch 4.
"""
import math
from functools import wraps

import torch
import torch.nn.functional as F
from torch import nn, einsum


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def round_down_nearest_multiple(n, divisor):
    return n // divisor * divisor


def once(fn):
    called = False
    @wraps(fn)
    def inner(x):
        nonlocal called
        if called:
            return
        called = True
        return fn(x)
    return inner


print_once = once(print)


def l2norm(t):
    return F.normalize(t, p = 2, dim = -1)


def posemb_sincos_2d(patches, temperature = 10000, dtype = torch.float32):
    _, h, w, dim, device, dtype = *patches.shape, patches.device, patches.dtype

    y, x = torch.meshgrid(torch.arange(h, device = device), torch.arange(w, device = device), indexing = 'ij')
    assert (dim % 4) == 0, 'feature dimension must be multiple of 4 for sincos emb'

    omega = torch.arange(dim // 4, device = device) / (dim // 4 - 1)
    omega = 1. / (temperature ** omega)

    y = y.flatten()[:, None] * omega[None, :]
    x = x.flatten()[:, None] * omega[None, :]

    pe = torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim = 1)
    pe = pe.type(dtype)

    return pe.view(h, w, dim)


class LayerNorm(nn.Module):
    def __init__(self, dim, scale = True):
        super().__init__()
        self.learned_gamma = nn.Parameter(torch.ones(dim)) if scale else None

        self.register_buffer('gamma', torch.ones(dim), persistent = False)
        self.register_buffer('beta', torch.zeros(dim), persistent = False)

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], default(self.learned_gamma, self.gamma), self.beta)


class GEGLU(nn.Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim = -1)
        return F.gelu(gate) * x


def FeedForward(dim, mult = 4, dropout = 0.):
    dim_hidden = int(dim * mult * 2 / 3)

    return nn.Sequential(
        LayerNorm(dim),
        nn.Linear(dim, dim_hidden * 2, bias = False),
        GEGLU(),
        nn.Dropout(dropout),
        nn.Linear(dim_hidden, dim, bias = False)
    )


class Attention(nn.Module):
    def __init__(self, dim, causal = False, dim_head = 64, heads = 8, dropout = 0., scale = 8):
        super().__init__()
        self.heads = heads
        self.scale = scale
        self.causal = causal
        inner_dim = dim_head * heads

        self.norm = LayerNorm(dim)

        self.attn_dropout = nn.Dropout(dropout)

        self.to_q = nn.Linear(dim, inner_dim, bias = False)
        self.to_kv = nn.Linear(dim, inner_dim * 2, bias = False)

        self.q_scale = nn.Parameter(torch.ones(dim_head))
        self.k_scale = nn.Parameter(torch.ones(dim_head))

        self.to_out = nn.Sequential(
            nn.Linear(inner_dim, dim, bias = False),
            nn.Dropout(dropout)
        )

    def forward(self, x, rel_pos_bias = None, mask = None):
        b, n, _, device = *x.shape, x.device

        x = self.norm(x)

        q, k, v = self.to_q(x), *self.to_kv(x).chunk(2, dim = -1)

        q, k, v = map(lambda t: t.view(b, n, self.heads, -1).transpose(1, 2), (q, k, v))

        q, k = map(l2norm, (q, k))
        q = q * self.q_scale
        k = k * self.k_scale

        sim = einsum('b h i d, b h j d -> b h i j', q, k) * self.scale

        if exists(rel_pos_bias):
            sim = sim + rel_pos_bias

        if exists(mask):
            mask = mask[:, None, None, :]
            sim = sim.masked_fill(~mask, -torch.finfo(sim.dtype).max)

        attn = sim.softmax(dim = -1)
        attn = self.attn_dropout(attn)

        out = einsum('b h i j, b h j d -> b h i d', attn, v)

        out = out.transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


class Transformer(nn.Module):
    def __init__(self, dim, depth, dim_head = 64, heads = 8, attn_dropout = 0., ff_mult = 4, ff_dropout = 0.):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                Attention(dim = dim, dim_head = dim_head, heads = heads, dropout = attn_dropout),
                FeedForward(dim = dim, mult = ff_mult, dropout = ff_dropout),
            ]))

    def forward(self, x, rel_pos_bias = None, mask = None, return_all_layers = False):
        layers = []

        for attn, ff in self.layers:
            x = attn(x, rel_pos_bias = rel_pos_bias, mask = mask) + x
            x = ff(x) + x
            layers.append(x)

        if not return_all_layers:
            return x

        return x, torch.stack(layers[:-1])


def pair(t):
    return (t, t) if not isinstance(t, tuple) else t


class PatchTokens(nn.Module):
    def __init__(self, patch_size, dim):
        super().__init__()
        self.p1, self.p2 = patch_size
        patch_input_dim = self.p1 * self.p2
        self.norm_in = nn.LayerNorm(patch_input_dim)
        self.proj = nn.Linear(patch_input_dim, dim)
        self.norm_out = nn.LayerNorm(dim)

    def forward(self, x):
        b, hh, ww = x.shape
        h, w = hh // self.p1, ww // self.p2
        x = x.view(b, h, self.p1, w, self.p2).permute(0, 1, 3, 2, 4).reshape(b, h, w, self.p1 * self.p2)
        return self.norm_out(self.proj(self.norm_in(x)))


class AudioSpectrogramTransformer(nn.Module):
    def __init__(
        self,
        dim,
        depth,
        patch_size = 16,
        dim_head = 64,
        heads = 8,
        attn_dropout = 0.,
        ff_mult = 4,
        ff_dropout = 0.,
        accept_spec = True,
        accept_spec_time_first = True,
        patch_dropout_prob = 0.25
    ):
        super().__init__()
        self.dim = dim
        self.depth = depth

        self.patch_size = pair(patch_size)

        self.to_patch_tokens = PatchTokens(self.patch_size, dim)

        self.accept_spec = accept_spec
        self.accept_spec_time_first = accept_spec_time_first

        self.transformer = Transformer(
            dim = dim,
            depth = depth,
            dim_head = dim_head,
            heads = heads,
            attn_dropout = attn_dropout,
            ff_mult = ff_mult,
            ff_dropout = ff_dropout
        )

        self.norm = LayerNorm(dim)

        self.patch_dropout_prob = patch_dropout_prob

        mlp_hidden_dim = dim // 4

        self.dynamic_pos_bias_mlp = nn.Sequential(
            nn.Linear(2, mlp_hidden_dim),
            nn.SiLU(),
            nn.Linear(mlp_hidden_dim, mlp_hidden_dim),
            nn.SiLU(),
            nn.Linear(mlp_hidden_dim, heads),
        )

    def forward(
        self,
        x,
        force_no_patch_dropout = False,
        return_all_layers = False
    ):
        batch, device = x.shape[0], x.device
        assert (self.accept_spec and x.ndim == 3) or (not self.accept_spec and x.ndim == 2)

        if self.accept_spec and self.accept_spec_time_first:
            x = x.transpose(1, 2)

        height, width = x.shape[-2:]
        patch_height, patch_width = self.patch_size

        rounded_height, rounded_width = map(lambda args: round_down_nearest_multiple(*args), ((height, patch_height), (width, patch_width)))

        if (height, width) != (rounded_height, rounded_width): # just keep printing to be annoying until it is fixed
            print_once(f'spectrogram yielded shape of {(height, width)}, but had to be cropped to {(rounded_height, rounded_width)} to be patchified for transformer')

        x = x[..., :rounded_height, :rounded_width]

        x = self.to_patch_tokens(x)

        _, num_patch_height, num_patch_width, _ = x.shape

        grid = torch.stack(torch.meshgrid(
            torch.arange(num_patch_height, device = device),
            torch.arange(num_patch_width, device = device)
        , indexing = 'ij'), dim = -1)

        grid = grid.reshape(-1, 2)

        x = x + posemb_sincos_2d(x)

        x = x.reshape(batch, -1, x.shape[-1])

        if self.training and self.patch_dropout_prob > 0. and not force_no_patch_dropout:
            n, device = x.shape[1], x.device

            batch_indices = torch.arange(batch, device = device)
            batch_indices = batch_indices[:, None]
            num_patches_keep = max(1, int(n * (1 - self.patch_dropout_prob)))
            patch_indices_keep = torch.randn(batch, n, device = device).topk(num_patches_keep, dim = -1).indices

            x = x[batch_indices, patch_indices_keep]

            grid = grid.expand(batch, *grid.shape)
            grid = grid[batch_indices, patch_indices_keep]

        rel_dist = grid[..., :, None, :] - grid[..., None, :, :]
        rel_pos_bias = self.dynamic_pos_bias_mlp(rel_dist.float())
        rel_pos_bias = rel_pos_bias.movedim(-1, -3)

        x, all_layers = self.transformer(x, rel_pos_bias = rel_pos_bias, return_all_layers = True)

        x = x.mean(dim = 1)

        out = self.norm(x)

        if not return_all_layers:
            return out

        return out, all_layers


def build():
    # depth 2: Transformer.forward always stacks layers[:-1], which is empty at depth 1
    return AudioSpectrogramTransformer(dim = 16, depth = 2, patch_size = 4, dim_head = 8, heads = 2)


def train(specs):
    model = torch.compile(build().train())
    return [model(spec) for spec in specs]


def make():
    torch.manual_seed(0)
    exact = torch.randn(2, 8, 12)
    ragged = torch.randn(2, 10, 13)
    return build().train(), [(exact,), (ragged,), (exact, True, True)]
