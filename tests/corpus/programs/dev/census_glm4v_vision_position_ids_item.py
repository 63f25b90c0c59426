"""GLM-4V `get_vision_position_ids`: `grid_thw[0].item() // temp_merge_size` etc. size the aranges.

Source: huggingface/transformers@v5.23.0:src/transformers/models/glm4v/modeling_glm4v.py:897-945
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): Glm4vVisionModel and variants,
`hpos_ids = torch.arange(h)...` in the rotary position builder (the census-era form of this helper).
Kept: the three `.item()` divisions, temporal positions scaled by time_interval, meshgrid, stack/reshape and
the start offset; a caller loops over the image grids.
Simplified: the rope-index bookkeeping around it is reduced to concatenating the per-image ids.
"""
import torch
from torch import nn


class Glm4vModel(nn.Module):
    def get_vision_position_ids(self, start_position, grid_thw, temp_merge_size=1, spatial_merge_size=1,
                                time_interval=1.0, device=None):
        llm_grid_t, llm_grid_h, llm_grid_w = (
            grid_thw[0].item() // temp_merge_size,
            grid_thw[1].item() // spatial_merge_size,
            grid_thw[2].item() // spatial_merge_size,
        )

        position_temporal = (torch.arange(llm_grid_t, device=device) * time_interval).long()
        position_height = torch.arange(llm_grid_h, device=device) + start_position
        position_width = torch.arange(llm_grid_w, device=device) + start_position

        T_grid, H_grid, W_grid = torch.meshgrid(position_temporal, position_height, position_width, indexing="ij")
        vision_position_ids = torch.stack([T_grid, H_grid, W_grid], dim=0).reshape(3, -1)
        vision_position_ids[0] += start_position  # must be after time_interval multiply
        return vision_position_ids

    def forward(self, image_grid_thw):
        ids = []
        start = 0
        for grid in image_grid_thw:
            pos = self.get_vision_position_ids(start, grid, spatial_merge_size=2, device=image_grid_thw.device)
            ids.append(pos)
            start = start + 4
        return torch.cat(ids, dim=1)


model = torch.compile(Glm4vModel())


def make():
    return Glm4vModel(), [(torch.tensor([[1, 4, 4], [2, 2, 4]]),)]
