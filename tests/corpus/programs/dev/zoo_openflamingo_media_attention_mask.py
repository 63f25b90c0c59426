"""OpenFlamingo gated cross-attention: PerceiverResampler latents, then text attends only to its most recent image through a mask built from `media_locations.cumsum(dim=-1)`; `exists(...)` guards and a config-chosen `mask_op` (no break expected).

Source: mlfoundations/open_flamingo@090874958aeee23e73dc319b53c34621ffb16e6b:open_flamingo/src/helpers.py:1-250
Kept: exists, FeedForward, PerceiverAttention, PerceiverResampler (frame and
media-time embeddings behind exists()), MaskedCrossAttention (text_time cumsum,
`mask_op = torch.eq if ... else torch.ge`, zeroing text without preceding media),
GatedCrossAttentionBlock with tanh gates; a wrapper that resamples vision
features and runs one gated block, as Flamingo's vision encoding + conditioned
decoder layer do.
Simplified: einops rearrange/repeat/rearrange_many are written as reshape/
permute/expand (einops is not importable here); tiny dims; the gates start at
0.5 instead of 0 so the attention path matters.
"""
import torch
from torch import einsum, nn


def exists(val):
    return val is not None


def FeedForward(dim, mult=4):
    inner_dim = int(dim * mult)
    return nn.Sequential(
        nn.LayerNorm(dim),
        nn.Linear(dim, inner_dim, bias=False),
        nn.GELU(),
        nn.Linear(inner_dim, dim, bias=False),
    )


def _split_heads(t, h):
    # "... n (h d) -> ... h n d"
    *lead, n, hd = t.shape
    return t.reshape(*lead, n, h, hd // h).transpose(-3, -2)


class PerceiverAttention(nn.Module):
    def __init__(self, *, dim, dim_head=64, heads=8):
        super().__init__()
        self.scale = dim_head**-0.5
        self.heads = heads
        inner_dim = dim_head * heads

        self.norm_media = nn.LayerNorm(dim)
        self.norm_latents = nn.LayerNorm(dim)

        self.to_q = nn.Linear(dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(dim, inner_dim * 2, bias=False)
        self.to_out = nn.Linear(inner_dim, dim, bias=False)

    def forward(self, x, latents):
        x = self.norm_media(x)
        latents = self.norm_latents(latents)

        h = self.heads

        q = self.to_q(latents)
        kv_input = torch.cat((x, latents), dim=-2)
        k, v = self.to_kv(kv_input).chunk(2, dim=-1)
        # b t n (h d) -> b t h n d
        q, k, v = (_split_heads(t, h) for t in (q, k, v))
        q = q * self.scale

        # attention
        sim = einsum("... i d, ... j d  -> ... i j", q, k)
        sim = sim - sim.amax(dim=-1, keepdim=True).detach()
        attn = sim.softmax(dim=-1)

        out = einsum("... i j, ... j d -> ... i d", attn, v)
        out = out.transpose(-3, -2).flatten(-2)  # b t h n d -> b t n (h d)
        return self.to_out(out)


class PerceiverResampler(nn.Module):
    def __init__(
        self,
        *,
        dim,
        depth=6,
        dim_head=64,
        heads=8,
        num_latents=64,
        max_num_media=None,
        max_num_frames=None,
        ff_mult=4
    ):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, dim))
        self.frame_embs = (
            nn.Parameter(torch.randn(max_num_frames, dim))
            if exists(max_num_frames)
            else None
        )
        self.media_time_embs = (
            nn.Parameter(torch.randn(max_num_media, 1, dim))
            if exists(max_num_media)
            else None
        )

        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(
                nn.ModuleList(
                    [
                        PerceiverAttention(dim=dim, dim_head=dim_head, heads=heads),
                        FeedForward(dim=dim, mult=ff_mult),
                    ]
                )
            )

        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        b, T, F, v = x.shape[:4]

        # frame and media time embeddings
        if exists(self.frame_embs):
            frame_embs = self.frame_embs[:F][None, None, :, None, :].expand(b, T, F, v, -1)
            x = x + frame_embs
        x = x.flatten(2, 3)  # flatten the frame and spatial dimensions
        if exists(self.media_time_embs):
            x = x + self.media_time_embs[:T]

        # blocks
        latents = self.latents[None, None].expand(b, T, -1, -1)
        for attn, ff in self.layers:
            latents = attn(x, latents) + latents
            latents = ff(latents) + latents
        return self.norm(latents)


class MaskedCrossAttention(nn.Module):
    def __init__(
        self, *, dim, dim_visual, dim_head=64, heads=8, only_attend_immediate_media=True
    ):
        super().__init__()
        self.scale = dim_head**-0.5
        self.heads = heads
        inner_dim = dim_head * heads

        self.norm = nn.LayerNorm(dim)

        self.to_q = nn.Linear(dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(dim_visual, inner_dim * 2, bias=False)
        self.to_out = nn.Linear(inner_dim, dim, bias=False)

        # whether for text to only attend to immediate preceding image, or all images

        self.only_attend_immediate_media = only_attend_immediate_media

    def forward(self, x, media, media_locations=None):
        _, T_img, n = media.shape[:3]
        h = self.heads

        x = self.norm(x)

        q = self.to_q(x)
        media = media.flatten(1, 2)  # b t n d -> b (t n) d

        k, v = self.to_kv(media).chunk(2, dim=-1)
        q, k, v = (_split_heads(t, h) for t in (q, k, v))

        q = q * self.scale

        sim = einsum("... i d, ... j d -> ... i j", q, k)

        if exists(media_locations):
            # at each boolean of True, increment the time counter (relative to media time)
            text_time = media_locations.cumsum(dim=-1)
            media_time = torch.arange(T_img, device=x.device) + 1

            # text time must equal media time if only attending to most immediate image
            # otherwise, as long as text time is greater than media time (if attending to all previous images / media)
            mask_op = torch.eq if self.only_attend_immediate_media else torch.ge

            text_to_media_mask = mask_op(
                text_time[:, None, :, None],
                media_time.repeat_interleave(n)[None, None, None, :],
            )
            sim = sim.masked_fill(~text_to_media_mask, -torch.finfo(sim.dtype).max)

        sim = sim - sim.amax(dim=-1, keepdim=True).detach()
        attn = sim.softmax(dim=-1)

        if exists(media_locations) and self.only_attend_immediate_media:
            # any text without a preceding media needs to have attention zeroed out
            text_without_media_mask = text_time == 0
            text_without_media_mask = text_without_media_mask[:, None, :, None]
            attn = attn.masked_fill(text_without_media_mask, 0.0)

        out = einsum("... i j, ... j d -> ... i d", attn, v)
        out = out.transpose(1, 2).flatten(2)  # b h n d -> b n (h d)
        return self.to_out(out)


class GatedCrossAttentionBlock(nn.Module):
    def __init__(
        self,
        *,
        dim,
        dim_visual,
        dim_head=64,
        heads=8,
        ff_mult=4,
        only_attend_immediate_media=True
    ):
        super().__init__()
        self.attn = MaskedCrossAttention(
            dim=dim,
            dim_visual=dim_visual,
            dim_head=dim_head,
            heads=heads,
            only_attend_immediate_media=only_attend_immediate_media,
        )
        self.attn_gate = nn.Parameter(torch.tensor([0.5]))

        self.ff = FeedForward(dim, mult=ff_mult)
        self.ff_gate = nn.Parameter(torch.tensor([0.5]))

    def forward(
        self,
        x,
        media,
        media_locations=None,
    ):
        x = (
            self.attn(x, media, media_locations=media_locations) * self.attn_gate.tanh()
            + x
        )
        x = self.ff(x) * self.ff_gate.tanh() + x

        return x


class FlamingoCrossLayer(nn.Module):
    def __init__(self, dim=16, vis_dim=12):
        super().__init__()
        self.perceiver = PerceiverResampler(dim=vis_dim, depth=1, dim_head=4, heads=2, num_latents=3,
                                            max_num_media=4, max_num_frames=2, ff_mult=2)
        self.gated_cross_attn_layer = GatedCrossAttentionBlock(dim=dim, dim_visual=vis_dim, dim_head=4, heads=2,
                                                               ff_mult=2)

    def forward(self, lang_x, vision_x, media_locations=None):
        vis = self.perceiver(vision_x)
        return self.gated_cross_attn_layer(lang_x, vis, media_locations=media_locations)


model = torch.compile(FlamingoCrossLayer())


def make():
    torch.manual_seed(0)
    layer = FlamingoCrossLayer()
    lang_x = torch.randn(2, 7, 16)
    vision_x = torch.randn(2, 2, 1, 5, 12)  # b, T_img, F, v, d
    media_locations = torch.tensor([[0, 1, 0, 0, 1, 0, 0], [1, 0, 0, 0, 0, 0, 0]], dtype=torch.bool)
    return layer, [(lang_x, vision_x, media_locations), (lang_x, vision_x)]
