"""Pixtral vision forward without `image_sizes`: the slice bounds and position grids come from Python ints
and tensor shapes only (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/pixtral/modeling_pixtral.py:404-437
Census: penguinwu/oss-model-graph-break-corpus sweeps PixtralVisionModel with pixel values only.
Kept: the default `image_sizes = [(height, width)] * batch_size`, the per-image slices and meshgrid positions.
Simplified: ln_pre and rotary embeddings dropped.
"""
import torch
from torch import nn


class PixtralVisionModel(nn.Module):
    def __init__(self, patch_size=2, hidden=4):
        super().__init__()
        self.patch_size = patch_size
        self.patch_conv = nn.Conv2d(3, hidden, kernel_size=patch_size, stride=patch_size, bias=False)

    def forward(self, pixel_values):
        batch_size, _, height, width = pixel_values.shape
        image_sizes = [(height, width)] * batch_size
        patch_embeds = self.patch_conv(pixel_values.to(dtype=self.patch_conv.weight.dtype))
        patch_embeds_list = [
            embed[..., : (size[0] // self.patch_size), : (size[1] // self.patch_size)]
            for embed, size in zip(patch_embeds, image_sizes)
        ]
        patch_embeds = torch.cat([p.flatten(1).T for p in patch_embeds_list], dim=0).unsqueeze(0)
        position_ids = []
        for patch in patch_embeds_list:
            hpos_ids, wpos_ids = torch.meshgrid(
                torch.arange(patch.shape[-2], device=patch.device),
                torch.arange(patch.shape[-1], device=patch.device),
                indexing="ij",
            )
            position_ids.append(torch.stack([hpos_ids.flatten(), wpos_ids.flatten()], dim=-1))
        position_ids = torch.cat(position_ids, dim=0)
        return patch_embeds + position_ids.sum(-1, keepdim=True).unsqueeze(0)


def build():
    return torch.compile(PixtralVisionModel().eval(), fullgraph=True)


def make():
    torch.manual_seed(0)
    return PixtralVisionModel().eval(), [(torch.randn(2, 3, 8, 8),)]
