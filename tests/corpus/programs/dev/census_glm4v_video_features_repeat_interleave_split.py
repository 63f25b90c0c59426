"""GLM-4V `get_video_features`: `torch.repeat_interleave(hw, t, dim=0)` with tensor repeats, then
`torch.split(..., (grid.prod(-1) // merge**2).tolist())`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/glm4v/modeling_glm4v.py:1045-1064
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): Glm4vVisionModel,
Glm4vMoeVisionModel, GlmImageVisionModel, GlmOcrVisionModel: `cu_seqlens = torch.repeat_interleave(grid_thw[:, 1]
* grid_thw[:, 2], ...)` and `seqlens = (...).tolist()`.
Kept: get_video_features (frame repeat, prefix ones, vision call, split sizes from tolist, split).
Simplified: the vision tower is a Linear over pre-merged patches (one output row per merged patch).
"""
import torch
from torch import nn


class Glm4vVisionStub(nn.Module):
    spatial_merge_size = 2
    dtype = torch.float32

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 4)

    def forward(self, pixel_values, grid_thw=None):
        return self.proj(pixel_values)


class Glm4vModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = Glm4vVisionStub()

    def get_video_features(self, pixel_values_videos, video_grid_thw=None):
        pixel_values_videos = pixel_values_videos.type(self.visual.dtype)
        # reshape video_grid_thw -> [b, 3] -> [1, h, w] * frames
        t = video_grid_thw[:, 0]
        hw = video_grid_thw[:, 1:]
        # repeat each (h,w) row `t` times
        flattened_hw = torch.repeat_interleave(hw, t, dim=0)
        prefix_ones = video_grid_thw.new_ones(flattened_hw.shape[0], 1)
        flattened_video_grid_thw = torch.cat([prefix_ones, flattened_hw], dim=1)
        pooler_output = self.visual(pixel_values_videos, grid_thw=flattened_video_grid_thw)
        split_sizes = (video_grid_thw.prod(-1) // self.visual.spatial_merge_size**2).tolist()
        return torch.split(pooler_output, split_sizes)

    def forward(self, pixel_values_videos, video_grid_thw):
        video_embeds = self.get_video_features(pixel_values_videos, video_grid_thw)
        return torch.cat(video_embeds, dim=0)


model = torch.compile(Glm4vModel(), dynamic=False)


def make():
    torch.manual_seed(0)
    grid = torch.tensor([[2, 2, 2], [1, 2, 4]])
    return Glm4vModel(), [(torch.randn(4, 6), grid)]
