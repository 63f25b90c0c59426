"""Idefics2 image features: all-zero padding images are dropped with a boolean index `pixel_values[real_images_inds]`, and the features are split per sample with `num_real_images_per_batch.tolist()`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/idefics2/modeling_idefics2.py:820-870
Kept: get_image_features verbatim from the reshape to the split: the padding
image detection, the optional pixel_attention_mask (built or indexed), the
unfold-based patch_attention_mask, the connector called with the flattened
mask, and the per-sample split.
Simplified: vision model is a linear over flattened patches, connector a
masked linear; patch size 2, 4x4 images, 3 channels.
"""
import torch
from torch import nn


class VisionConfig:
    patch_size = 2


class Idefics2Config:
    vision_config = VisionConfig()


class VisionModel(nn.Module):
    def __init__(self, patch_size=2, dim=8):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Linear(3 * patch_size * patch_size, dim)

    def forward(self, pixel_values, patch_attention_mask):
        p = self.patch_size
        b, c, h, w = pixel_values.shape
        patches = pixel_values.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 1, 4, 5).reshape(b, -1, c * p * p)
        return self.proj(patches) * patch_attention_mask.view(b, -1, 1)


class Connector(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, image_hidden_states, attention_mask):
        return self.proj(image_hidden_states) * attention_mask[..., None]


class Idefics2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.dtype = torch.float32
        self.vision_model = VisionModel(config.vision_config.patch_size)
        self.connector = Connector()

    def get_image_features(self, pixel_values, pixel_attention_mask=None):
        batch_size, num_images, num_channels, height, width = pixel_values.shape
        pixel_values = pixel_values.to(dtype=self.dtype)  # fp16 compatibility
        pixel_values = pixel_values.view(batch_size * num_images, *pixel_values.shape[2:])

        # Remove padding images - padding images are full 0.
        nb_values_per_image = pixel_values.shape[1:].numel()
        real_images_inds = (pixel_values == 0.0).sum(dim=(-1, -2, -3)) != nb_values_per_image
        num_real_images_per_batch = real_images_inds.view(batch_size, num_images).sum(dim=1)
        pixel_values = pixel_values[real_images_inds].contiguous()

        # Handle the vision attention mask
        if pixel_attention_mask is None:
            pixel_attention_mask = torch.ones(
                size=(pixel_values.size(0), pixel_values.size(2), pixel_values.size(3)),
                dtype=torch.bool,
                device=pixel_values.device,
            )
        else:
            # Remove padding images from the mask
            pixel_attention_mask = pixel_attention_mask.view(batch_size * num_images, *pixel_attention_mask.shape[2:])
            pixel_attention_mask = pixel_attention_mask[real_images_inds].contiguous()

        patch_size = self.config.vision_config.patch_size
        patches_subgrid = pixel_attention_mask.unfold(dimension=1, size=patch_size, step=patch_size)
        patches_subgrid = patches_subgrid.unfold(dimension=2, size=patch_size, step=patch_size)
        patch_attention_mask = (patches_subgrid.sum(dim=(-1, -2)) == patch_size * patch_size).bool()

        image_hidden_states = self.vision_model(pixel_values=pixel_values, patch_attention_mask=patch_attention_mask)

        image_features = self.connector(
            image_hidden_states, attention_mask=patch_attention_mask.view(pixel_values.size(0), -1)
        )
        return [f.reshape(-1, f.shape[-1]) for f in image_features.split(num_real_images_per_batch.tolist())]

    def forward(self, pixel_values, pixel_attention_mask=None):
        return self.get_image_features(pixel_values, pixel_attention_mask)


model = Idefics2Model(Idefics2Config())
model.compile()


def make():
    torch.manual_seed(0)
    pixel_values = torch.randn(2, 2, 3, 4, 4)
    pixel_values[1, 1] = 0.0  # second sample has one real image and one padding image
    mask = torch.ones(2, 2, 4, 4, dtype=torch.bool)
    mask[0, 0, :, 2:] = False
    return Idefics2Model(Idefics2Config()), [(pixel_values,), (pixel_values, mask)]
