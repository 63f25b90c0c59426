"""Qwen3.5 multimodal rope index: per-sample `.tolist()` scan for image/video spans (3D position ids).

Source: huggingface/transformers@d8c1e2844cbfeae1e342a1723d7f4e69ff1adcc0:src/transformers/models/qwen3_5/modeling_qwen3_5.py:1423-1530
(census: penguinwu/oss-model-graph-break-corpus, Qwen3_5Model; the multimodal position path).
Kept: Qwen3_5Model.get_rope_index as written (video_grid_thw repeat_interleave split, grid `.tolist()`,
masked input ids, argwhere on vision-start tokens, `range(image_nums + video_nums)` over tensor counts,
`input_tokens.index`, per-span arange/stack, `llm_pos_ids_list[-1].max() + 1`, mrope deltas) and the
compute_3d_position_ids wrapper that caches `self.rope_deltas`.
Simplified: the compiled forward only computes position ids (no vision tower / language model);
config is a small plain class.
"""
import torch
from torch import nn


class VisionConfig:
    spatial_merge_size = 2


class Qwen3_5Config:
    vision_config = VisionConfig()
    image_token_id = 7
    video_token_id = 8
    vision_start_token_id = 5
    vision_end_token_id = 6


class Qwen3_5Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(16, 4)
        self.rope_deltas = None  # cache rope_deltas here

    def get_rope_index(
        self,
        input_ids=None,
        image_grid_thw=None,
        video_grid_thw=None,
        attention_mask=None,
        **kwargs,
    ):
        """Different from the original implementation, Qwen3_5 use timestamps rather than absolute time position ids."""

        # Since we use timestamps to separate videos, the video_grid_thw should also be split
        if video_grid_thw is not None:
            video_grid_thw = torch.repeat_interleave(video_grid_thw, video_grid_thw[:, 0], dim=0)
            video_grid_thw[:, 0] = 1

        image_grid_thw_list = image_grid_thw.tolist() if image_grid_thw is not None else None
        video_grid_thw_list = video_grid_thw.tolist() if video_grid_thw is not None else None

        spatial_merge_size = self.config.vision_config.spatial_merge_size
        image_token_id = self.config.image_token_id
        video_token_id = self.config.video_token_id
        vision_start_token_id = self.config.vision_start_token_id
        mrope_position_deltas = []
        total_input_ids = input_ids
        if attention_mask is None:
            attention_mask = torch.ones_like(total_input_ids)
        position_ids = torch.zeros(
            3,
            input_ids.shape[0],
            input_ids.shape[1],
            dtype=input_ids.dtype,
            device=input_ids.device,
        )
        image_index, video_index = 0, 0
        attention_mask = attention_mask.to(total_input_ids.device)
        for i, input_ids in enumerate(total_input_ids):
            input_ids = input_ids[attention_mask[i] == 1]
            image_nums, video_nums = 0, 0
            vision_start_indices = torch.argwhere(input_ids == vision_start_token_id).squeeze(1)
            vision_tokens = input_ids[vision_start_indices + 1]
            image_nums = (vision_tokens == image_token_id).sum()
            video_nums = (vision_tokens == video_token_id).sum()
            input_tokens = input_ids.tolist()
            llm_pos_ids_list: list = []
            st = 0
            remain_images, remain_videos = image_nums, video_nums
            for _ in range(image_nums + video_nums):
                if image_token_id in input_tokens and remain_images > 0:
                    ed_image = input_tokens.index(image_token_id, st)
                else:
                    ed_image = len(input_tokens) + 1
                if video_token_id in input_tokens and remain_videos > 0:
                    ed_video = input_tokens.index(video_token_id, st)
                else:
                    ed_video = len(input_tokens) + 1
                if ed_image < ed_video:
                    t, h, w = image_grid_thw_list[image_index]
                    image_index += 1
                    remain_images -= 1
                    ed = ed_image
                else:
                    t, h, w = video_grid_thw_list[video_index]
                    video_index += 1
                    remain_videos -= 1
                    ed = ed_video
                llm_grid_t, llm_grid_h, llm_grid_w = (
                    t,
                    h // spatial_merge_size,
                    w // spatial_merge_size,
                )
                text_len = ed - st
                st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
                # t_index is always 0 because llm_grid_t is always 1
                t_index = torch.arange(llm_grid_t).view(-1, 1).expand(-1, llm_grid_h * llm_grid_w).flatten()
                h_index = torch.arange(llm_grid_h).view(1, -1, 1).expand(llm_grid_t, -1, llm_grid_w).flatten()
                w_index = torch.arange(llm_grid_w).view(1, 1, -1).expand(llm_grid_t, llm_grid_h, -1).flatten()
                llm_pos_ids_list.append(torch.stack([t_index, h_index, w_index]) + text_len + st_idx)
                st = ed + llm_grid_t * llm_grid_h * llm_grid_w
            if st < len(input_tokens):
                st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                text_len = len(input_tokens) - st
                llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
            llm_positions = torch.cat(llm_pos_ids_list, dim=1).reshape(3, -1)
            position_ids[..., i, attention_mask[i] == 1] = llm_positions.to(position_ids.device)
            mrope_position_deltas.append(llm_positions.max() + 1 - len(total_input_ids[i]))
        mrope_position_deltas = torch.tensor(mrope_position_deltas, device=input_ids.device).unsqueeze(1)
        return position_ids, mrope_position_deltas

    def compute_3d_position_ids(
        self,
        input_ids,
        inputs_embeds,
        image_grid_thw=None,
        video_grid_thw=None,
        attention_mask=None,
        past_key_values=None,
    ):
        past_key_values_length = 0 if past_key_values is None else past_key_values.get_seq_length()
        if self.rope_deltas is None or past_key_values_length == 0:
            position_ids, rope_deltas = self.get_rope_index(
                input_ids,
                image_grid_thw=image_grid_thw,
                video_grid_thw=video_grid_thw,
                attention_mask=attention_mask,
            )
            self.rope_deltas = rope_deltas
        else:
            batch_size, seq_length, _ = inputs_embeds.shape
            delta = (past_key_values_length + self.rope_deltas).to(inputs_embeds.device)
            position_ids = torch.arange(seq_length, device=inputs_embeds.device)
            position_ids = position_ids.view(1, 1, -1).expand(3, batch_size, -1)
            position_ids = position_ids + delta
        return position_ids

    def forward(self, input_ids, image_grid_thw=None, video_grid_thw=None, attention_mask=None):
        inputs_embeds = self.embed(input_ids)
        position_ids = self.compute_3d_position_ids(
            input_ids,
            inputs_embeds,
            image_grid_thw=image_grid_thw,
            video_grid_thw=video_grid_thw,
            attention_mask=attention_mask,
        )
        return inputs_embeds, position_ids


model = Qwen3_5Model(Qwen3_5Config())
compiled_model = torch.compile(model)


def make():
    torch.manual_seed(0)
    m = Qwen3_5Model(Qwen3_5Config())
    # text, <vision_start>, 4 image tokens (grid 1x4x4 merged by 2), <vision_end>, text
    image_ids = torch.tensor([[1, 2, 5, 7, 7, 7, 7, 6, 3, 4]])
    image_grid = torch.tensor([[1, 4, 4]])
    # two timestamped video frames: <t> <vs> 4 video tokens <ve> twice
    video_ids = torch.tensor([[9, 5, 8, 8, 8, 8, 6, 9, 5, 8, 8, 8, 8, 6]])
    video_grid = torch.tensor([[2, 4, 4]])
    text_ids = torch.tensor([[1, 2, 3, 4], [0, 2, 3, 4]])
    text_mask = torch.tensor([[1, 1, 1, 1], [0, 1, 1, 1]])
    return m, [
        (image_ids, image_grid),
        (video_ids, None, video_grid),
        (text_ids, None, None, text_mask),
    ]
