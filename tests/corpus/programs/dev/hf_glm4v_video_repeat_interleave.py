"""GLM-4V video features: `torch.repeat_interleave(hw, t, dim=0)` with tensor repeats, then `.tolist()` split sizes.

Source: huggingface/transformers@v5.23.0:src/transformers/models/glm4v/modeling_glm4v.py:1043-1070
Kept: get_video_features' dtype cast, the t/hw split of video_grid_thw, the
tensor-repeats repeat_interleave, prefix_ones/cat, the visual call and the
`.prod(-1) // merge**2` split sizes turned into a list for torch.split.
Simplified: the vision tower is a linear layer over patches; merge size 1.
"""
import torch
from torch import nn


class Visual(nn.Module):
    spatial_merge_size = 1

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 8)
        self.dtype = torch.float32

    def forward(self, pixel_values, grid_thw):
        return self.proj(pixel_values) * grid_thw.shape[0]


class Glm4vModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = Visual()

    def get_video_features(self, pixel_values_videos, video_grid_thw=None):
        pixel_values_videos = pixel_values_videos.type(self.visual.dtype)
        t = video_grid_thw[:, 0]
        hw = video_grid_thw[:, 1:]
        flattened_hw = torch.repeat_interleave(hw, t, dim=0)
        prefix_ones = video_grid_thw.new_ones(flattened_hw.shape[0], 1)
        flattened_video_grid_thw = torch.cat([prefix_ones, flattened_hw], dim=1)
        video_embeds = self.visual(pixel_values_videos, grid_thw=flattened_video_grid_thw)
        split_sizes = (video_grid_thw.prod(-1) // self.visual.spatial_merge_size**2).tolist()
        video_embeds = torch.split(video_embeds, split_sizes)
        return video_embeds

    def forward(self, pixel_values_videos, video_grid_thw):
        return self.get_video_features(pixel_values_videos, video_grid_thw)


model = Glm4vModel()
model.compile()


def make():
    torch.manual_seed(0)
    grid = torch.tensor([[2, 1, 2], [1, 2, 2]])
    return Glm4vModel(), [(torch.randn(8, 6), grid)]
