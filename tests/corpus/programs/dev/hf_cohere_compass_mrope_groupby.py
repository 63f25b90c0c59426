"""Multimodal rope index (v5.23 Cohere Compass / GLM-4.6V): `itertools.groupby` over `input_token_type.tolist()` per sample.

Source: huggingface/transformers@v5.23.0:src/transformers/models/cohere_compass/modeling_cohere_compass.py:1070-1130
Kept: the per-batch loop with the attention-mask boolean filtering of ids
and token types, groupby of (index, type) pairs into (modality, start, end)
groups, the per-group text/image position construction with a running
current_pos, cat and the masked write into position_ids.
Simplified: image groups use a fixed 2x2 grid; one batch row.
"""
import itertools

import torch
from torch import nn


class RopeIndex(nn.Module):
    def forward(self, input_ids, mm_token_type_ids, attention_mask=None):
        position_ids = torch.zeros(3, input_ids.shape[0], input_ids.shape[1], dtype=torch.long)
        for batch_idx in range(input_ids.shape[0]):
            current_input_ids = input_ids[batch_idx]
            input_token_type = mm_token_type_ids[batch_idx]
            if attention_mask is not None:
                current_input_ids = current_input_ids[attention_mask[batch_idx].bool()]
                input_token_type = input_token_type[attention_mask[batch_idx].bool()]
            input_type_group = []
            for key, group in itertools.groupby(enumerate(input_token_type.tolist()), lambda x: x[1]):
                group = list(group)
                start_index = group[0][0]
                end_index = group[-1][0] + 1
                input_type_group.append((key, start_index, end_index))
            current_pos = 0
            llm_pos_ids_list = []
            for modality_type, start_idx, end_idx in input_type_group:
                if modality_type == 0:
                    text_len = end_idx - start_idx
                    llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + current_pos)
                    current_pos += text_len
                else:
                    h_index = torch.arange(2).view(-1, 1).expand(-1, 2).flatten()
                    w_index = torch.arange(2).view(1, -1).expand(2, -1).flatten()
                    t_index = torch.zeros_like(h_index)
                    llm_pos_ids_list.append(torch.stack([t_index, h_index, w_index]) + current_pos)
                    current_pos += 2
            llm_positions = torch.cat(llm_pos_ids_list, dim=1).reshape(3, -1)
            if attention_mask is not None:
                position_ids[:, batch_idx, attention_mask[batch_idx].bool()] = llm_positions
            else:
                position_ids[:, batch_idx] = llm_positions
        return position_ids


rope_index = torch.compile(RopeIndex())


def make():
    ids = torch.tensor([[1, 2, 9, 9, 9, 9, 3]])
    types = torch.tensor([[0, 0, 1, 1, 1, 1, 0]])
    return RopeIndex(), [(ids, types), (ids, types, torch.ones(1, 7, dtype=torch.long))]
