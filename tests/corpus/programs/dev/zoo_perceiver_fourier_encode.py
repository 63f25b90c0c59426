"""perceiver-pytorch Perceiver: fourier-encoded axis positions from `torch.linspace` per input axis, a cache_fn closure that weight-ties layers by key, masked (and optionally inverted) cross-attention into latents, self-attention stacks and a mean-pool head.

Source: lucidrains/perceiver-pytorch@96097c6a27cc64fc1f196d3a58d32b8a82f573e1:perceiver_pytorch/perceiver_pytorch.py:1-301
Kept: the whole file's logic: exists/default/l1norm/cache_fn (nonlocal dict,
`_cache`/`key` kwargs), fourier_encode, PreNorm with the context norm via
kwargs.update, GEGLU, FeedForward, Attention with mask and inverted attention,
Perceiver's constructor (inverted_cross_attn tuple, cached layer factories,
weight tying) and forward (axis unpacking, fourier positions, return_embeddings).
Simplified: einops rearrange/repeat/Reduce become reshape/expand/mean modules;
depth 2 with weight tying, 8 latents of 16, 2 cross heads, 1 latent self-attn per
cross, 6x6x3 images, 5 classes.
"""
from __future__ import annotations
from math import pi, log
from functools import wraps

import torch
from torch import nn, einsum, stack, cat
from torch.nn import Module, ModuleList
import torch.nn.functional as F


class MeanTokens(nn.Module):
    """einops Reduce('b n d -> b d', 'mean')."""

    def forward(self, x):
        return x.mean(dim = 1)


# helpers

def exists(val):
    return val is not None

def default(val, d):
    return val if exists(val) else d

def l1norm(t, dim = -1, eps = 1e-8):
    return F.normalize(t, p = 1, dim = dim, eps = eps)

def cache_fn(f):
    cache = dict()
    @wraps(f)
    def cached_fn(*args, _cache = True, key = None, **kwargs):
        if not _cache:
            return f(*args, **kwargs)
        nonlocal cache
        if key in cache:
            return cache[key]
        result = f(*args, **kwargs)
        cache[key] = result
        return result
    return cached_fn

def fourier_encode(x, max_freq, num_bands = 4):
    x = x.unsqueeze(-1)
    device, dtype, orig_x = x.device, x.dtype, x

    scales = torch.linspace(1., max_freq / 2, num_bands, device = device, dtype = dtype)
    scales = scales[(*((None,) * (len(x.shape) - 1)), Ellipsis)]

    x = x * scales * pi
    x = cat([x.sin(), x.cos()], dim = -1)
    x = cat((x, orig_x), dim = -1)
    return x

# helper classes

class PreNorm(nn.Module):
    def __init__(self, dim, fn, context_dim = None):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)
        self.norm_context = nn.LayerNorm(context_dim) if exists(context_dim) else None

    def forward(self, x, **kwargs):
        x = self.norm(x)

        if exists(self.norm_context):
            context = kwargs['context']
            normed_context = self.norm_context(context)
            kwargs.update(context = normed_context)

        return self.fn(x, **kwargs)

class GEGLU(Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim = -1)
        return x * F.gelu(gates)

class FeedForward(Module):
    def __init__(self, dim, mult = 4, dropout = 0.):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, dim * mult * 2),
            GEGLU(),
            nn.Linear(dim * mult, dim),
            nn.Dropout(dropout)
        )

    def forward(self, x):
        return self.net(x)

class Attention(nn.Module):
    def __init__(self, query_dim, context_dim = None, heads = 8, dim_head = 64, dropout = 0.):
        super().__init__()
        inner_dim = dim_head * heads
        context_dim = default(context_dim, query_dim)

        self.scale = dim_head ** -0.5
        self.heads = heads

        self.to_q = nn.Linear(query_dim, inner_dim, bias = False)
        self.to_kv = nn.Linear(context_dim, inner_dim * 2, bias = False)

        self.dropout = nn.Dropout(dropout)
        self.to_out = nn.Linear(inner_dim, query_dim)

    def forward(self, x, context = None, mask = None, inverted_attention = False):
        h = self.heads

        q = self.to_q(x)
        context = default(context, x)
        k, v = self.to_kv(context).chunk(2, dim = -1)

        q, k, v = (t.reshape(t.shape[0], t.shape[1], h, -1).transpose(1, 2).reshape(t.shape[0] * h, t.shape[1], -1) for t in (q, k, v))

        sim = einsum('b i d, b j d -> b i j', q, k) * self.scale

        if exists(mask):
            mask = mask.reshape(mask.shape[0], -1)
            max_neg_value = -torch.finfo(sim.dtype).max
            mask = mask[:, None, None, :].expand(-1, h, 1, -1).reshape(-1, 1, mask.shape[-1])
            sim.masked_fill_(~mask, max_neg_value)

        # attention, what we cannot get enough of

        if inverted_attention:
            attn = sim.softmax(dim = -2)

            if exists(mask):
                attn = attn.masked_fill(~mask, 0.)

            attn = l1norm(attn)
        else:
            attn = sim.softmax(dim = -1)

        attn = self.dropout(attn)

        # aggregate

        out = einsum('b i j, b j d -> b i d', attn, v)
        out = out.reshape(-1, h, out.shape[1], out.shape[2]).transpose(1, 2).reshape(-1, out.shape[1], h * out.shape[2])
        return self.to_out(out)

# main class

class Perceiver(nn.Module):
    def __init__(
        self,
        *,
        num_freq_bands,
        depth,
        max_freq,
        input_channels = 3,
        input_axis = 2,
        num_latents = 512,
        latent_dim = 512,
        cross_heads = 1,
        latent_heads = 8,
        cross_dim_head = 64,
        latent_dim_head = 64,
        num_classes = 1000,
        attn_dropout = 0.,
        ff_dropout = 0.,
        weight_tie_layers = False,
        fourier_encode_data = True,
        self_per_cross_attn = 1,
        final_classifier_head = True,
        inverted_cross_attn: bool | tuple[bool, ...] = False
    ):
        """The shape of the final attention mechanism will be:
        depth * (cross attention -> self_per_cross_attn * self attention)

        Args:
          num_freq_bands: Number of freq bands, with original value (2 * K + 1)
          depth: Depth of net.
          max_freq: Maximum frequency, hyperparameter depending on how
              fine the data is.
          freq_base: Base for the frequency
          input_channels: Number of channels for each token of the input.
          input_axis: Number of axes for input data (2 for images, 3 for video)
          num_latents: Number of latents, or induced set points, or centroids.
              Different papers giving it different names.
          latent_dim: Latent dimension.
          cross_heads: Number of heads for cross attention. Paper said 1.
          latent_heads: Number of heads for latent self attention, 8.
          cross_dim_head: Number of dimensions per cross attention head.
          latent_dim_head: Number of dimensions per latent self attention head.
          num_classes: Output number of classes.
          attn_dropout: Attention dropout
          ff_dropout: Feedforward dropout
          weight_tie_layers: Whether to weight tie layers (optional).
          fourier_encode_data: Whether to auto-fourier encode the data, using
              the input_axis given. defaults to True, but can be turned off
              if you are fourier encoding the data yourself.
          self_per_cross_attn: Number of self attention blocks per cross attn.
          final_classifier_head: mean pool and project embeddings to number of classes (num_classes) at the end
        """
        super().__init__()
        self.input_axis = input_axis
        self.max_freq = max_freq
        self.num_freq_bands = num_freq_bands

        # inverted attention
        # slot attention: https://arxiv.org/abs/2006.15055
        # inverted attention: https://openreview.net/forum?id=3H8j14mA3X

        if isinstance(inverted_cross_attn, bool):
            inverted_cross_attn = (inverted_cross_attn,) * depth

        assert len(inverted_cross_attn) == depth, f'inverted_cross_attn tuple must have length of depth ({depth})'
        self.inverted_cross_attn = inverted_cross_attn

        # fourier

        self.fourier_encode_data = fourier_encode_data
        fourier_channels = (input_axis * ((num_freq_bands * 2) + 1)) if fourier_encode_data else 0
        input_dim = fourier_channels + input_channels

        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))

        get_cross_attn = lambda: PreNorm(latent_dim, Attention(latent_dim, input_dim, heads = cross_heads, dim_head = cross_dim_head, dropout = attn_dropout), context_dim = input_dim)
        get_cross_ff = lambda: PreNorm(latent_dim, FeedForward(latent_dim, dropout = ff_dropout))
        get_latent_attn = lambda: PreNorm(latent_dim, Attention(latent_dim, heads = latent_heads, dim_head = latent_dim_head, dropout = attn_dropout))
        get_latent_ff = lambda: PreNorm(latent_dim, FeedForward(latent_dim, dropout = ff_dropout))

        get_cross_attn, get_cross_ff, get_latent_attn, get_latent_ff = (cache_fn(fn) for fn in (get_cross_attn, get_cross_ff, get_latent_attn, get_latent_ff))

        self.layers = ModuleList([])
        for i in range(depth):
            should_cache = i > 0 and weight_tie_layers
            cache_args = {'_cache': should_cache}

            self_attns = ModuleList([])

            for block_ind in range(self_per_cross_attn):
                self_attns.append(ModuleList([
                    get_latent_attn(**cache_args, key = block_ind),
                    get_latent_ff(**cache_args, key = block_ind)
                ]))

            self.layers.append(ModuleList([
                get_cross_attn(**cache_args),
                get_cross_ff(**cache_args),
                self_attns
            ]))

        self.to_logits = nn.Sequential(
            MeanTokens(),
            nn.LayerNorm(latent_dim),
            nn.Linear(latent_dim, num_classes)
        ) if final_classifier_head else nn.Identity()

    def forward(
        self,
        data,
        mask = None,
        return_embeddings = False
    ):
        b, *axis, _, device, dtype = *data.shape, data.device, data.dtype
        assert len(axis) == self.input_axis, 'input data must have the right number of axis'

        if self.fourier_encode_data:
            # calculate fourier encoded positions in the range of [-1, 1], for all axis

            axis_pos = [torch.linspace(-1., 1., steps = size, device = device, dtype = dtype) for size in axis]
            pos = stack(torch.meshgrid(*axis_pos, indexing = 'ij'), dim = -1)
            enc_pos = fourier_encode(pos, self.max_freq, self.num_freq_bands)
            enc_pos = enc_pos.reshape(*enc_pos.shape[:-2], -1)
            enc_pos = enc_pos.unsqueeze(0).expand(b, *enc_pos.shape)

            data = cat((data, enc_pos), dim = -1)

        # concat to channels of data and flatten axis

        data = data.reshape(data.shape[0], -1, data.shape[-1])

        x = self.latents.unsqueeze(0).expand(b, -1, -1)

        # layers

        for i, (cross_attn, cross_ff, self_attns) in enumerate(self.layers):
            x = cross_attn(x, context = data, mask = mask, inverted_attention = self.inverted_cross_attn[i]) + x
            x = cross_ff(x) + x

            for self_attn, self_ff in self_attns:
                x = self_attn(x) + x
                x = self_ff(x) + x

        # allow for fetching embeddings

        if return_embeddings:
            return x

        # to logits

        return self.to_logits(x)


def build_perceiver():
    return Perceiver(
        input_channels = 3,
        input_axis = 2,
        num_freq_bands = 4,
        max_freq = 10.,
        depth = 2,
        num_latents = 8,
        latent_dim = 16,
        cross_heads = 2,
        latent_heads = 2,
        cross_dim_head = 8,
        latent_dim_head = 8,
        num_classes = 5,
        weight_tie_layers = True,
        inverted_cross_attn = (False, True),
    )


model = torch.compile(build_perceiver())


def make():
    torch.manual_seed(0)
    img = torch.randn(2, 6, 6, 3)
    mask = torch.ones(2, 6, 6, dtype = torch.bool)
    mask[1, 4:] = False
    return build_perceiver(), [(img,), (img, mask), (img, None, True)]
