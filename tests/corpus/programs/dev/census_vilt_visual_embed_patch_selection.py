"""ViLT `visual_embed`: per-image patch grids from the pixel mask (`zip(x_h, x_w)` over tensors into
`interpolate(size=(h, w))`), `nonzero`/`unique` row grouping, and `torch.multinomial` sampling of patches up to
`max_image_length`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/vilt/modeling_vilt.py:92-170
(ViltEmbeddings.visual_embed)
Census: penguinwu/oss-model-graph-break-corpus sweeps ViltModel (vision-language with pixel masks).
Kept: the method verbatim through the gathers of x, x_mask, patch_index and pos_embed (mask interpolation,
per-image positional interpolation with padding, patch index grid, the max_image_length branches, valid/non-valid
index lists, the multinomial choice with and without replacement).
Simplified: config image_size 8, patch 2, hidden 4; the cls token/pooling after the gather is dropped.
"""
import torch
from torch import nn


class ViltConfig:
    image_size = 8
    patch_size = 2
    hidden_size = 4
    num_channels = 3


class ViltPatchEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.projection = nn.Conv2d(config.num_channels, config.hidden_size, kernel_size=config.patch_size,
                                    stride=config.patch_size)

    def forward(self, pixel_values):
        return self.projection(pixel_values)


class ViltEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.patch_embeddings = ViltPatchEmbeddings(config)
        num_patches = (config.image_size // config.patch_size) ** 2
        self.position_embeddings = nn.Parameter(torch.randn(1, num_patches + 1, config.hidden_size))

    def visual_embed(self, pixel_values, pixel_mask, max_image_length=200):
        _, _, ph, pw = self.patch_embeddings.projection.weight.shape

        x = self.patch_embeddings(pixel_values)
        x_mask = pixel_mask[:, None, :, :].float()
        x_mask = nn.functional.interpolate(x_mask, size=(x.shape[2], x.shape[3])).long()
        x_h = x_mask[:, 0].sum(dim=1)[:, 0]
        x_w = x_mask[:, 0].sum(dim=2)[:, 0]

        batch_size, num_channels, height, width = x.shape
        patch_dim = self.config.image_size // self.config.patch_size
        spatial_pos = self.position_embeddings[:, 1:, :].transpose(1, 2).view(1, num_channels, patch_dim, patch_dim)
        pos_embed = torch.cat(
            [
                nn.functional.pad(
                    nn.functional.interpolate(
                        spatial_pos,
                        size=(h, w),
                        mode="bilinear",
                        align_corners=True,
                    ),
                    (0, width - w, 0, height - h),
                )
                for h, w in zip(x_h, x_w)
            ],
            dim=0,
        )

        pos_embed = pos_embed.flatten(2).transpose(1, 2)
        x = x.flatten(2).transpose(1, 2)
        # Set `device` here, otherwise `patch_index` will always be on `CPU` and will fail near the end for torch>=1.13
        patch_index = torch.stack(
            torch.meshgrid(torch.arange(x_mask.shape[-2]), torch.arange(x_mask.shape[-1]), indexing="ij"), dim=-1
        ).to(device=x_mask.device)
        patch_index = patch_index[None, None, :, :, :]
        patch_index = patch_index.expand(x_mask.shape[0], x_mask.shape[1], -1, -1, -1)
        patch_index = patch_index.flatten(1, 3)
        x_mask = x_mask.flatten(1)

        if max_image_length < 0 or max_image_length is None or not isinstance(max_image_length, int):
            effective_resolution = x_h * x_w
            max_image_length = effective_resolution.max()
        else:
            effective_resolution = x_h * x_w
            max_image_length = min(effective_resolution.max(), max_image_length)

        valid_idx = x_mask.nonzero(as_tuple=False)
        non_valid_idx = (1 - x_mask).nonzero(as_tuple=False)
        unique_rows = valid_idx[:, 0].unique()
        valid_row_idx = [valid_idx[valid_idx[:, 0] == u] for u in unique_rows]
        non_valid_row_idx = [non_valid_idx[non_valid_idx[:, 0] == u] for u in unique_rows]

        valid_nums = [v.size(0) for v in valid_row_idx]
        non_valid_nums = [v.size(0) for v in non_valid_row_idx]
        pad_nums = [max_image_length - v for v in valid_nums]

        select = []
        for i, (v, nv, p) in enumerate(zip(valid_nums, non_valid_nums, pad_nums)):
            if p <= 0:
                valid_choice = torch.multinomial(torch.ones(v).float(), max_image_length)
                select.append(valid_row_idx[i][valid_choice])
            else:
                pad_choice = torch.multinomial(torch.ones(nv).float(), p, replacement=True)
                select.append(torch.cat([valid_row_idx[i], non_valid_row_idx[i][pad_choice]], dim=0))

        select = torch.cat(select, dim=0)
        x = x[select[:, 0], select[:, 1]].view(batch_size, -1, num_channels)
        x_mask = x_mask[select[:, 0], select[:, 1]].view(batch_size, -1)
        # `patch_index` should be on the same device as `select`, which is ensured at definition time.
        patch_index = patch_index[select[:, 0], select[:, 1]].view(batch_size, -1, 2)
        pos_embed = pos_embed[select[:, 0], select[:, 1]].view(batch_size, -1, num_channels)
        return x, x_mask, patch_index, pos_embed

    def forward(self, pixel_values, pixel_mask, max_image_length=200):
        x, x_mask, patch_index, pos_embed = self.visual_embed(pixel_values, pixel_mask, max_image_length)
        return x + pos_embed, x_mask


embeddings = torch.compile(ViltEmbeddings(ViltConfig()))


def make():
    torch.manual_seed(0)
    pixels = torch.randn(2, 3, 8, 8)
    mask = torch.ones(2, 8, 8, dtype=torch.long)
    mask[1, :, 4:] = 0
    return ViltEmbeddings(ViltConfig()), [(pixels, mask), (pixels, mask, 4), (pixels, mask, -1)]
