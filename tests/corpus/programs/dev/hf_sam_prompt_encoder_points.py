"""SAM prompt encoder `_embed_points`: optional padding point, then label-driven torch.where chains instead of masked writes (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/sam/modeling_sam.py:590-645
Kept: _embed_points verbatim (the +0.5 shift, the `pad` concat of a -1
label point, the shared positional embedding, the four torch.where
applications for not-a-point / padding / label 0 / label 1) and the shared
random-Fourier positional embedding.
Simplified: image size 16, hidden 8.
"""
import torch
from torch import nn


class SamPositionalEmbedding(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.scale = 1.0
        self.register_buffer("positional_embedding", self.scale * torch.randn((2, hidden // 2)))

    def forward(self, input_coords, input_shape=None):
        coordinates = input_coords.clone()
        if input_shape is not None:
            coordinates[:, :, :, 0] = coordinates[:, :, :, 0] / input_shape[1]
            coordinates[:, :, :, 1] = coordinates[:, :, :, 1] / input_shape[0]
        coordinates = 2 * coordinates - 1
        coordinates = coordinates.to(self.positional_embedding.dtype)
        coordinates = coordinates @ self.positional_embedding
        coordinates = 2 * torch.pi * coordinates
        return torch.cat([torch.sin(coordinates), torch.cos(coordinates)], dim=-1)


class SamPromptEncoder(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.shared_embedding = SamPositionalEmbedding(hidden)
        self.input_image_size = 16
        self.point_embed = nn.ModuleList([nn.Embedding(1, hidden) for _ in range(4)])
        self.not_a_point_embed = nn.Embedding(1, hidden)

    def _embed_points(self, points, labels, pad: bool):
        points = points + 0.5
        if pad:
            target_point_shape = (points.shape[0], points.shape[1], 1, points.shape[-1])
            target_labels_shape = (points.shape[0], points.shape[1], 1)
            padding_point = torch.zeros(target_point_shape, device=points.device)
            padding_label = -torch.ones(target_labels_shape, device=labels.device)
            points = torch.cat([points, padding_point], dim=2)
            labels = torch.cat([labels, padding_label], dim=2)
        input_shape = (self.input_image_size, self.input_image_size)
        point_embedding = self.shared_embedding(points, input_shape)
        point_embedding = torch.where(labels[..., None] == -1, self.not_a_point_embed.weight, point_embedding)
        point_embedding = torch.where(labels[..., None] != -10, point_embedding, torch.zeros_like(point_embedding))
        point_embedding = torch.where((labels == 0)[:, :, :, None], point_embedding + self.point_embed[0].weight[None, None, :, :], point_embedding)
        point_embedding = torch.where((labels == 1)[:, :, :, None], point_embedding + self.point_embed[1].weight[None, None, :, :], point_embedding)
        return point_embedding

    def forward(self, input_points, input_labels, input_boxes=None):
        pad = input_boxes is None
        return self._embed_points(input_points, input_labels, pad=pad)


prompt_encoder = torch.compile(SamPromptEncoder())


def make():
    torch.manual_seed(0)
    points = torch.rand(1, 1, 3, 2) * 16
    labels = torch.tensor([[[1, 0, -10]]])
    return SamPromptEncoder(), [(points, labels), (points, labels, torch.rand(1, 1, 4))]
