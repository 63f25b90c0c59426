"""timm PatchEmbed: `_assert(H == self.img_size[0], f"...")` on Python shape ints, dynamic_img_pad padding (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/patch_embed.py:117-142
Kept: the strict / divisible / dynamic_img_pad three-way logic with timm's
_assert (torch._assert) and f-string messages, the conv projection, flatten
to NLC and the norm.
Simplified: Format handling reduced to the flatten path; 8x8 images, patch 4.
"""
import torch
import torch.nn.functional as F
from torch import nn

_assert = torch._assert


class PatchEmbed(nn.Module):
    def __init__(self, img_size=8, patch_size=4, in_chans=3, embed_dim=8, strict_img_size=True, dynamic_img_pad=False):
        super().__init__()
        self.img_size = (img_size, img_size)
        self.patch_size = (patch_size, patch_size)
        self.flatten = True
        self.strict_img_size = strict_img_size
        self.dynamic_img_pad = dynamic_img_pad
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        B, C, H, W = x.shape
        if self.img_size is not None:
            if self.strict_img_size:
                _assert(H == self.img_size[0], f"Input height ({H}) doesn't match model ({self.img_size[0]}).")
                _assert(W == self.img_size[1], f"Input width ({W}) doesn't match model ({self.img_size[1]}).")
            elif not self.dynamic_img_pad:
                _assert(H % self.patch_size[0] == 0, f"Input height ({H}) should be divisible by patch size ({self.patch_size[0]}).")
                _assert(W % self.patch_size[1] == 0, f"Input width ({W}) should be divisible by patch size ({self.patch_size[1]}).")
        if self.dynamic_img_pad:
            pad_h = (self.patch_size[0] - H % self.patch_size[0]) % self.patch_size[0]
            pad_w = (self.patch_size[1] - W % self.patch_size[1]) % self.patch_size[1]
            x = F.pad(x, (0, pad_w, 0, pad_h))
        x = self.proj(x)
        if self.flatten:
            x = x.flatten(2).transpose(1, 2)
        x = self.norm(x)
        return x


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.strict = PatchEmbed()
        self.padded = PatchEmbed(strict_img_size=False, dynamic_img_pad=True)

    def forward(self, x, y):
        return self.strict(x), self.padded(y)


embed = torch.compile(Embed(), dynamic=True)


def make():
    torch.manual_seed(0)
    return Embed(), [(torch.randn(1, 3, 8, 8), torch.randn(1, 3, 10, 7))]
