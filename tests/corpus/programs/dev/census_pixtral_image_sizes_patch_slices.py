"""Pixtral vision forward: per-image slices `embed[..., : size[0] // patch, : size[1] // patch]`; with an
`image_sizes` tensor the bounds are 0-d tensors, with the default list they are Python ints.

Source: huggingface/transformers@v5.23.0:src/transformers/models/pixtral/modeling_pixtral.py:404-437
Census: penguinwu/oss-model-graph-break-corpus lists PixtralVisionModel among the swept models.
Kept: the `image_sizes is None` default, the patch conv, the per-image slice list, flatten/cat and the
meshgrid position ids built from each patch's shape.
Simplified: ln_pre and the rotary embedding are dropped; the positions are summed into the output.
"""
import torch
from torch import nn


class PixtralVisionModel(nn.Module):
    def __init__(self, patch_size=2, hidden=4):
        super().__init__()
        self.patch_size = patch_size
        self.patch_conv = nn.Conv2d(3, hidden, kernel_size=patch_size, stride=patch_size, bias=False)

    def forward(self, pixel_values, image_sizes=None):
        if image_sizes is None:
            batch_size, _, height, width = pixel_values.shape
            image_sizes = [(height, width)] * batch_size

        # pass images through initial convolution independently
        target_dtype = self.patch_conv.weight.dtype
        patch_embeds = self.patch_conv(pixel_values.to(dtype=target_dtype))
        patch_embeds_list = [
            embed[..., : (size[0] // self.patch_size), : (size[1] // self.patch_size)]
            for embed, size in zip(patch_embeds, image_sizes)
        ]

        # flatten to a single sequence
        patch_embeds = torch.cat([p.flatten(1).T for p in patch_embeds_list], dim=0).unsqueeze(0)

        # Create 2D positions for axial rotations
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


vision = torch.compile(PixtralVisionModel())


def make():
    torch.manual_seed(0)
    pixels = torch.randn(2, 3, 8, 8)
    return PixtralVisionModel(), [(pixels,), (pixels, torch.tensor([[8, 4], [4, 8]]))]
