"""diffusers PatchEmbed (DiT/PixArt): recompute the 2-D sin-cos position embedding when the latent size differs, output_type="pt" path (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/embeddings.py:221-368,555-584
Kept: get_2d_sincos_pos_embed / _from_grid / get_1d_sincos_pos_embed_from_grid
verbatim (the "np" deprecation branches are kept, not taken), and
PatchEmbed.forward (pos_embed_max_size switch, proj, flatten, optional layer
norm, the `self.height != height or self.width != width` recompute, the dtype cast).
Simplified: deprecate/get_2d_sincos_pos_embed_np stand-ins raise; dim 8, patch 2.
"""
import torch
from torch import nn


def deprecate(*args, **kwargs):
    raise RuntimeError("numpy output_type is deprecated")


def get_2d_sincos_pos_embed_np(**kwargs):
    raise RuntimeError("not used")


get_2d_sincos_pos_embed_from_grid_np = get_1d_sincos_pos_embed_from_grid_np = get_2d_sincos_pos_embed_np


def maybe_adjust_dtype_for_device(dtype, device):
    return dtype


def get_2d_sincos_pos_embed(embed_dim, grid_size, cls_token=False, extra_tokens=0, interpolation_scale=1.0, base_size=16, device: torch.device | None=None, output_type: str='np'):
    if output_type == 'np':
        deprecation_message = "`get_2d_sincos_pos_embed` uses `torch` and supports `device`. `from_numpy` is no longer required.  Pass `output_type='pt' to use the new version now."
        deprecate("output_type=='np'", '0.33.0', deprecation_message, standard_warn=False)
        return get_2d_sincos_pos_embed_np(embed_dim=embed_dim, grid_size=grid_size, cls_token=cls_token, extra_tokens=extra_tokens, interpolation_scale=interpolation_scale, base_size=base_size)
    if isinstance(grid_size, int):
        grid_size = (grid_size, grid_size)
    grid_h = torch.arange(grid_size[0], device=device, dtype=torch.float32) / (grid_size[0] / base_size) / interpolation_scale
    grid_w = torch.arange(grid_size[1], device=device, dtype=torch.float32) / (grid_size[1] / base_size) / interpolation_scale
    grid = torch.meshgrid(grid_w, grid_h, indexing='xy')
    grid = torch.stack(grid, dim=0)
    grid = grid.reshape([2, 1, grid_size[1], grid_size[0]])
    pos_embed = get_2d_sincos_pos_embed_from_grid(embed_dim, grid, output_type=output_type)
    if cls_token and extra_tokens > 0:
        pos_embed = torch.concat([torch.zeros([extra_tokens, embed_dim]), pos_embed], dim=0)
    return pos_embed


def get_2d_sincos_pos_embed_from_grid(embed_dim, grid, output_type='np'):
    if output_type == 'np':
        deprecation_message = "`get_2d_sincos_pos_embed_from_grid` uses `torch` and supports `device`. `from_numpy` is no longer required.  Pass `output_type='pt' to use the new version now."
        deprecate("output_type=='np'", '0.33.0', deprecation_message, standard_warn=False)
        return get_2d_sincos_pos_embed_from_grid_np(embed_dim=embed_dim, grid=grid)
    if embed_dim % 2 != 0:
        raise ValueError('embed_dim must be divisible by 2')
    emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0], output_type=output_type)
    emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1], output_type=output_type)
    emb = torch.concat([emb_h, emb_w], dim=1)
    return emb


def get_1d_sincos_pos_embed_from_grid(embed_dim, pos, output_type='np', flip_sin_to_cos=False, dtype=None):
    if output_type == 'np':
        deprecation_message = "`get_1d_sincos_pos_embed_from_grid` uses `torch` and supports `device`. `from_numpy` is no longer required.  Pass `output_type='pt' to use the new version now."
        deprecate("output_type=='np'", '0.34.0', deprecation_message, standard_warn=False)
        return get_1d_sincos_pos_embed_from_grid_np(embed_dim=embed_dim, pos=pos)
    if embed_dim % 2 != 0:
        raise ValueError('embed_dim must be divisible by 2')
    if dtype is None:
        dtype = maybe_adjust_dtype_for_device(torch.float64, pos.device)
    omega = torch.arange(embed_dim // 2, device=pos.device, dtype=dtype)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000 ** omega
    pos = pos.reshape(-1)
    out = torch.outer(pos, omega)
    emb_sin = torch.sin(out)
    emb_cos = torch.cos(out)
    emb = torch.concat([emb_sin, emb_cos], dim=1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, embed_dim // 2:], emb[:, :embed_dim // 2]], dim=1)
    return emb



class PatchEmbed(nn.Module):
    def __init__(self, height=8, width=8, patch_size=2, in_channels=4, embed_dim=8, base_size=4, interpolation_scale=1.0):
        super().__init__()
        self.flatten = True
        self.layer_norm = False
        self.patch_size = patch_size
        self.pos_embed_max_size = None
        self.proj = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.height, self.width = height // patch_size, width // patch_size
        self.base_size = base_size
        self.interpolation_scale = interpolation_scale
        pos_embed = get_2d_sincos_pos_embed(embed_dim, (self.height, self.width), base_size=base_size, interpolation_scale=interpolation_scale, output_type="pt")
        self.register_buffer("pos_embed", pos_embed.float().unsqueeze(0), persistent=True)

    def forward(self, latent):
        if self.pos_embed_max_size is not None:
            height, width = latent.shape[-2:]
        else:
            height, width = latent.shape[-2] // self.patch_size, latent.shape[-1] // self.patch_size
        latent = self.proj(latent)
        if self.flatten:
            latent = latent.flatten(2).transpose(1, 2)
        if self.layer_norm:
            latent = self.norm(latent)
        if self.pos_embed is None:
            return latent.to(latent.dtype)
        if self.height != height or self.width != width:
            pos_embed = get_2d_sincos_pos_embed(embed_dim=self.pos_embed.shape[-1], grid_size=(height, width), base_size=self.base_size,
                                                interpolation_scale=self.interpolation_scale, device=latent.device, output_type="pt")
            pos_embed = pos_embed.float().unsqueeze(0)
        else:
            pos_embed = self.pos_embed
        return (latent + pos_embed).to(latent.dtype)


pos_embed = torch.compile(PatchEmbed())


def make():
    torch.manual_seed(0)
    return PatchEmbed(), [(torch.randn(1, 4, 8, 8),), (torch.randn(1, 4, 12, 8),)]
