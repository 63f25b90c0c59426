"""timm Hiera get_random_mask (MAE pretraining): argsort of rand noise, gather to restore order (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/hiera.py:670-692
Kept: get_random_mask (math.prod of the mask unit grid, len_keep, argsort
twice, the keep-prefix and gather, bool mask), and forward's
`if mask is None and self.training` switch that calls it.
Simplified: the encoder applies the mask to unit tokens; 2x2 mask units, dim 4.
"""
import math

import torch
from torch import nn


class Hiera(nn.Module):
    def __init__(self, dim=4, mask_spatial_shape=(2, 2), mask_ratio=0.5):
        super().__init__()
        self.mask_spatial_shape = list(mask_spatial_shape)
        self.mask_ratio = mask_ratio
        self.proj = nn.Linear(dim, dim)

    def get_random_mask(self, x, mask_ratio: float):
        B = x.shape[0]
        num_windows = math.prod(self.mask_spatial_shape)
        len_keep = int(num_windows * (1 - mask_ratio))
        noise = torch.rand(B, num_windows, device=x.device)
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        mask = torch.zeros([B, num_windows], device=x.device)
        mask[:, :len_keep] = 1
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return mask.bool()

    def forward(self, x, mask=None):
        if mask is None and self.training:
            mask = self.get_random_mask(x, mask_ratio=self.mask_ratio)
        if mask is not None:
            x = x * mask[..., None].to(x.dtype)
        return self.proj(x), mask


def pretrain_step(model, x):
    model.train()
    compiled = torch.compile(model)
    return compiled(x)


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 4)
    return Hiera().train(), [(x,), (x, torch.tensor([[True, False, True, False], [False, False, True, True]]))]
