"""Idefics3 vision embeddings (census-era form): bucketized NaViT position ids written with a boolean
mask on both sides, `position_ids[mask.view(b, -1)] = pos_ids[mask.view(b, -1)]`.

Source: huggingface/transformers@v5.5 (census version):src/transformers/models/idefics3/modeling_idefics3.py:140-176
(the same function as 5.23 except the final merge line, which 5.23 rewrote with torch.where)
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): AriaModel eval+train (its vision tower
is Idefics3's), `modeling_idefics3.py:174 position_ids[patch_attention_mask.view(batch_size, -1)] = pos_ids[...]`.
Kept: Idefics3VisionEmbeddings.__init__/forward with the boolean-mask merge.
Simplified: image 8x8, patch 2, hidden 4.
"""
import torch
from torch import nn


class Idefics3VisionConfig:
    hidden_size = 4
    image_size = 8
    patch_size = 2
    num_channels = 3


class Idefics3VisionEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config.hidden_size
        self.image_size = config.image_size
        self.patch_size = config.patch_size
        self.patch_embedding = nn.Conv2d(
            in_channels=config.num_channels,
            out_channels=self.embed_dim,
            kernel_size=self.patch_size,
            stride=self.patch_size,
            padding="valid",
        )
        self.num_patches_per_side = self.image_size // self.patch_size
        self.num_patches = self.num_patches_per_side**2
        self.num_positions = self.num_patches
        self.position_embedding = nn.Embedding(self.num_positions, self.embed_dim)

    def forward(self, pixel_values, patch_attention_mask):
        batch_size, _, max_im_h, max_im_w = pixel_values.shape

        patch_embeds = self.patch_embedding(pixel_values)
        embeddings = patch_embeds.flatten(2).transpose(1, 2)

        max_nb_patches_h, max_nb_patches_w = max_im_h // self.patch_size, max_im_w // self.patch_size
        boundaries = torch.arange(
            1 / self.num_patches_per_side, 1.0, 1 / self.num_patches_per_side, device=pixel_values.device
        )
        position_ids = torch.full(
            size=(batch_size, max_nb_patches_h * max_nb_patches_w), fill_value=0, device=pixel_values.device
        )

        nb_patches_h = patch_attention_mask[:, :, 0].sum(dim=1)  # (batch_size,)
        nb_patches_w = patch_attention_mask[:, 0, :].sum(dim=1)  # (batch_size,)

        step_h = 1.0 / nb_patches_h  # (batch_size,)
        step_w = 1.0 / nb_patches_w  # (batch_size,)

        max_patches_h = patch_attention_mask.size(1)
        max_patches_w = patch_attention_mask.size(2)
        h_indices = torch.arange(max_patches_h, device=position_ids.device, dtype=torch.float32)
        w_indices = torch.arange(max_patches_w, device=position_ids.device, dtype=torch.float32)

        fractional_coords_h = h_indices[None, :] * step_h[:, None]
        fractional_coords_w = w_indices[None, :] * step_w[:, None]

        fractional_coords_h = torch.clamp(fractional_coords_h, max=(1.0 - 1e-6))
        fractional_coords_w = torch.clamp(fractional_coords_w, max=(1.0 - 1e-6))

        bucket_coords_h = torch.bucketize(fractional_coords_h, boundaries, right=True)
        bucket_coords_w = torch.bucketize(fractional_coords_w, boundaries, right=True)

        pos_ids = bucket_coords_h[:, :, None] * self.num_patches_per_side + bucket_coords_w[:, None, :]
        pos_ids = pos_ids.reshape(batch_size, -1)

        position_ids[patch_attention_mask.view(batch_size, -1)] = pos_ids[patch_attention_mask.view(batch_size, -1)]

        embeddings = embeddings + self.position_embedding(position_ids)
        return embeddings


embeddings = torch.compile(Idefics3VisionEmbeddings(Idefics3VisionConfig()))


def make():
    torch.manual_seed(0)
    pixels = torch.randn(2, 3, 8, 8)
    mask = torch.ones(2, 4, 4, dtype=torch.bool)
    mask[1, 2:, :] = False
    mask[1, :, 3:] = False
    return Idefics3VisionEmbeddings(Idefics3VisionConfig()), [(pixels, mask)]
