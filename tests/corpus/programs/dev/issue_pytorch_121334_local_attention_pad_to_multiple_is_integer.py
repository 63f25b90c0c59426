"""SoundStream encoder's local attention: LocalAttention with autopad calls pad_to_multiple, which
tests `(seqlen / multiple).is_integer()` before padding to the window size.

Source: pytorch/pytorch#121334 (https://github.com/pytorch/pytorch/issues/121334) -- "Graph break:
const method call float.is_integer" while compiling lucidrains/audiolm-pytorch's SoundStream
(soundstream.py:436 `x = attn(x, attn_bias = attn_bias) + x`); the helper is
lucidrains/local-attention@0beeff26435e47d7baaa90ec74c8946b185ad20f:local_attention/local_attention.py.
Kept: pad_to_multiple and look_around verbatim, LocalAttention.forward's autopad path
(orig_seq_len, map over q/k/v, the divisibility assert, windows, look_around on keys/values and
positions, causal mask, pad-value mask, slice back to orig_seq_len), a LocalMHA-style wrapper
and the SoundStream LocalTransformer loop `x = attn(x) + x; x = ff(x) + x`.
Simplified: einops rearrange/pack/unpack written as reshape/view; no rotary / xpos / dynamic
position bias; 1 layer, dim 8, 2 heads, window 4.
"""
import math

import torch
import torch.nn.functional as F
from torch import einsum, nn


def exists(val):
    return val is not None


def default(value, d):
    return d if not exists(value) else value


def max_neg_value(tensor):
    return -torch.finfo(tensor.dtype).max


def pad_to_multiple(tensor, multiple, dim=-1, value=0):
    seqlen = tensor.shape[dim]
    m = seqlen / multiple
    if m.is_integer():
        return tensor
    remainder = math.ceil(m) * multiple - seqlen
    pad_offset = (0,) * (-1 - dim) * 2
    return F.pad(tensor, (*pad_offset, 0, remainder), value = value)


def look_around(x, backward = 1, forward = 0, pad_value = -1, dim = 2):
    t = x.shape[1]
    dims = (len(x.shape) - dim) * (0, 0)
    padded_x = F.pad(x, (*dims, backward, forward), value = pad_value)
    tensors = [padded_x[:, ind:(ind + t), ...] for ind in range(forward + backward + 1)]
    return torch.cat(tensors, dim = dim)


class LocalAttention(nn.Module):
    def __init__(
        self,
        window_size,
        causal = False,
        look_backward = 1,
        look_forward = None,
        dropout = 0.,
        autopad = False,
        exact_windowsize = False
    ):
        super().__init__()
        look_forward = default(look_forward, 0 if causal else 1)
        assert not (causal and look_forward > 0), 'you cannot look forward if causal'

        self.window_size = window_size
        self.autopad = autopad
        self.exact_windowsize = exact_windowsize
        self.causal = causal
        self.look_backward = look_backward
        self.look_forward = look_forward
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v):
        shape, autopad, pad_value, window_size, causal, look_backward, look_forward = q.shape, self.autopad, -1, self.window_size, self.causal, self.look_backward, self.look_forward

        packed_shape = q.shape[:-2]
        q, k, v = map(lambda t: t.reshape(-1, *t.shape[-2:]), (q, k, v))

        # auto padding

        if autopad:
            orig_seq_len = q.shape[1]
            q, k, v = map(lambda t: pad_to_multiple(t, self.window_size, dim = -2), (q, k, v))

        b, n, dim_head, device, dtype = *q.shape, q.device, q.dtype
        scale = dim_head ** -0.5

        assert (n % window_size) == 0, f'sequence length {n} must be divisible by window size {window_size} for local attention'

        windows = n // window_size

        seq = torch.arange(n, device = device)
        b_t = seq.view(1, windows, window_size)

        bq, bk, bv = map(lambda t: t.reshape(t.shape[0], windows, window_size, t.shape[-1]), (q, k, v))

        look_around_kwargs = dict(
            backward =  look_backward,
            forward =  look_forward,
            pad_value = pad_value
        )

        bk = look_around(bk, **look_around_kwargs)
        bv = look_around(bv, **look_around_kwargs)

        bq_t = b_t
        bq_k = look_around(b_t, **look_around_kwargs)

        bq_t = bq_t[..., :, None]
        bq_k = bq_k[..., None, :]

        sim = einsum('b h i e, b h j e -> b h i j', bq, bk) * scale

        mask_value = max_neg_value(sim)

        if causal:
            mask = bq_t < bq_k

            if self.exact_windowsize:
                max_causal_window_size = (self.window_size * self.look_backward)
                mask = mask | (bq_t > (bq_k + max_causal_window_size))

            sim = sim.masked_fill(mask, mask_value)
            del mask

        # mask out padding value

        mask = bq_k == pad_value
        sim = sim.masked_fill(mask, mask_value)
        del mask

        attn = sim.softmax(dim = -1)
        attn = self.dropout(attn)

        out = einsum('b h i j, b h j e -> b h i e', attn, bv)
        out = out.reshape(out.shape[0], -1, out.shape[-1])

        if autopad:
            out = out[:, :orig_seq_len, :]

        out = out.reshape(*packed_shape, *out.shape[-2:])
        return out


class LocalMHA(nn.Module):
    def __init__(self, *, dim, window_size, dim_head = 4, heads = 2, causal = True, prenorm = True):
        super().__init__()
        inner_dim = dim_head * heads
        self.norm = nn.LayerNorm(dim) if prenorm else None
        self.heads = heads
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias = False)
        self.attn_fn = LocalAttention(
            window_size = window_size,
            causal = causal,
            autopad = True,
            exact_windowsize = True
        )
        self.to_out = nn.Linear(inner_dim, dim, bias = False)

    def forward(self, x):
        if exists(self.norm):
            x = self.norm(x)

        q, k, v = self.to_qkv(x).chunk(3, dim = -1)
        b, n, _ = q.shape
        q, k, v = map(lambda t: t.view(b, n, self.heads, -1).transpose(1, 2), (q, k, v))

        out = self.attn_fn(q, k, v)
        out = out.transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


def FeedForward(dim, mult = 2):
    return nn.Sequential(
        nn.LayerNorm(dim),
        nn.Linear(dim, dim * mult),
        nn.GELU(),
        nn.Linear(dim * mult, dim)
    )


class LocalTransformer(nn.Module):
    def __init__(self, *, dim, depth, heads, window_size):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                LocalMHA(dim = dim, heads = heads, window_size = window_size),
                FeedForward(dim = dim)
            ]))

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return x


class SoundStreamEncoderAttn(nn.Module):
    def __init__(self, dim = 8, depth = 1, heads = 2, window_size = 4):
        super().__init__()
        self.encoder_attn = LocalTransformer(dim = dim, depth = depth, heads = heads, window_size = window_size)

    def forward(self, x):
        # (b, c, n) encoder output -> attend over time
        x = x.transpose(1, 2)
        x = self.encoder_attn(x)
        return x.transpose(1, 2)


soundstream = torch.compile(SoundStreamEncoderAttn())


def make():
    torch.manual_seed(0)
    return SoundStreamEncoderAttn(), [(torch.randn(2, 8, 8),), (torch.randn(2, 8, 6),)]
