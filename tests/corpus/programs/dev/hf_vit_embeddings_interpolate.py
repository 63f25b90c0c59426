"""ViT embeddings: `interpolate_pos_encoding` on shape ints with torch_int, bool_masked_pos mixing, size ValueError (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/vit/modeling_vit.py:89-161
Kept: interpolate_pos_encoding (the is_tracing/num_patches/height==width early
return, torch_int of the sqrt, bicubic interpolate, cat with the class
position), forward's mask-token mixing, cls token, the interpolate flag and
the size-mismatch ValueError.
Simplified: patch embedding is a conv; image 8, patch 2, hidden 8.
"""
import torch
from torch import nn


def torch_int(x):
    return x.to(torch.int64) if torch.jit.is_tracing() and isinstance(x, torch.Tensor) else int(x)


class ViTEmbeddings(nn.Module):
    def __init__(self, hidden=8, image_size=8, patch_size=2):
        super().__init__()
        self.cls_token = nn.Parameter(torch.randn(1, 1, hidden))
        self.mask_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.patch_embeddings = nn.Sequential(nn.Conv2d(3, hidden, patch_size, patch_size), nn.Flatten(2))
        num_patches = (image_size // patch_size) ** 2
        self.position_embeddings = nn.Parameter(torch.randn(1, num_patches + 1, hidden))
        self.dropout = nn.Dropout(0.0)
        self.patch_size = patch_size
        self.image_size = (image_size, image_size)

    def interpolate_pos_encoding(self, embeddings, height: int, width: int):
        num_patches = embeddings.shape[1] - 1
        num_positions = self.position_embeddings.shape[1] - 1
        if not torch.jit.is_tracing() and num_patches == num_positions and height == width:
            return self.position_embeddings
        class_pos_embed = self.position_embeddings[:, :1]
        patch_pos_embed = self.position_embeddings[:, 1:]
        dim = embeddings.shape[-1]
        new_height = height // self.patch_size
        new_width = width // self.patch_size
        sqrt_num_positions = torch_int(num_positions**0.5)
        patch_pos_embed = patch_pos_embed.reshape(1, sqrt_num_positions, sqrt_num_positions, dim)
        patch_pos_embed = patch_pos_embed.permute(0, 3, 1, 2)
        patch_pos_embed = nn.functional.interpolate(patch_pos_embed, size=(new_height, new_width), mode="bicubic", align_corners=False)
        patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
        return torch.cat((class_pos_embed, patch_pos_embed), dim=1)

    def forward(self, pixel_values, bool_masked_pos=None, interpolate_pos_encoding: bool = False):
        batch_size, num_channels, height, width = pixel_values.shape
        embeddings = self.patch_embeddings(pixel_values).transpose(1, 2)
        if bool_masked_pos is not None:
            seq_length = embeddings.shape[1]
            mask_tokens = self.mask_token.expand(batch_size, seq_length, -1)
            mask = bool_masked_pos.unsqueeze(-1).type_as(mask_tokens)
            embeddings = embeddings * (1.0 - mask) + mask_tokens * mask
        cls_tokens = self.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        if interpolate_pos_encoding:
            embeddings = embeddings + self.interpolate_pos_encoding(embeddings, height, width)
        else:
            if height != self.image_size[0] or width != self.image_size[1]:
                raise ValueError(f"Input image size ({height}*{width}) doesn't match model ({self.image_size[0]}*{self.image_size[1]}).")
            embeddings = embeddings + self.position_embeddings
        return self.dropout(embeddings)


embeddings = torch.compile(ViTEmbeddings())

RAISING_INPUTS = {3: "ValueError"}


def make():
    torch.manual_seed(0)
    img = torch.randn(1, 3, 8, 8)
    masked = torch.zeros(1, 16, dtype=torch.bool)
    masked[0, :3] = True
    return ViTEmbeddings(), [(img,), (img, masked), (torch.randn(1, 3, 12, 8), None, True), (torch.randn(1, 3, 12, 8),)]
