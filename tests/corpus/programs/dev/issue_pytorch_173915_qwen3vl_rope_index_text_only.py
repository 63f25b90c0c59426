"""Qwen3-VL `get_rope_index` without image/video grids: text-only 3-D positions from
`attention_mask.cumsum(-1) - 1` and `masked_fill_` (the branch of the reported function that has no
data-dependent control flow).

Source: https://github.com/pytorch/pytorch/issues/173915 (the `get_rope_index` excerpt quoted in the report)
Kept: the signature, config token ids, the default attention mask, and the text-only branch verbatim as quoted.
Simplified: the multimodal branch (with the `.item()` calls the report is about) is not quoted in full in the
report and is not translated; the method lives on a small module.
"""
import torch
from torch import nn


class VisionConfig:
    spatial_merge_size = 2


class Qwen3VLConfig:
    vision_start_token_id = 7
    image_token_id = 8
    video_token_id = 9
    vision_config = VisionConfig()


class Qwen3VLModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

    def get_rope_index(self, input_ids, image_grid_thw=None, video_grid_thw=None, attention_mask=None):
        device = input_ids.device
        B, S = input_ids.shape

        vision_start_token_id = self.config.vision_start_token_id
        image_token_id = self.config.image_token_id
        video_token_id = self.config.video_token_id
        spatial_merge_size = self.config.vision_config.spatial_merge_size

        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids, dtype=torch.long)

        if image_grid_thw is None and video_grid_thw is None:
            pos = attention_mask.cumsum(-1) - 1
            pos.masked_fill_(attention_mask == 0, 0)
            position_ids = pos.unsqueeze(0).expand(3, -1, -1).contiguous()
            return position_ids
        raise NotImplementedError("the multimodal branch is not part of this translation")

    def forward(self, input_ids, attention_mask=None):
        return self.get_rope_index(input_ids, attention_mask=attention_mask)


model = torch.compile(Qwen3VLModel(Qwen3VLConfig()))


def make():
    ids = torch.tensor([[3, 4, 5, 6], [0, 0, 5, 6]])
    return Qwen3VLModel(Qwen3VLConfig()), [(ids,), (ids, torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]]))]
