"""Reformer axial position encodings in eval: `max_position_id = position_ids.max().item()` sizes a slice.

Source: huggingface/transformers@v5.23.0:src/transformers/models/reformer/modeling_reformer.py:200-295
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): ReformerModel eval,
`modeling_reformer.py:266 max_position_id = position_ids.max().item()`.
Kept: AxialPositionEmbeddings.forward: broadcast weights, the training branch (dropout2d) and the eval
branch with the axial-shape check, `.item()`, two `torch_compilable_check`s, the column cut and index_select.
Simplified: axial_pos_shape (4, 4), embedding dims (2, 2).
"""
from functools import reduce
from operator import mul

import torch
from torch import nn


def torch_compilable_check(cond, msg, error_type=ValueError):
    if torch.compiler.is_compiling():
        torch._check(cond)
        return
    if not cond:
        raise error_type(msg)


class ReformerConfig:
    axial_pos_shape = (4, 4)
    axial_pos_embds_dim = (2, 2)
    hidden_dropout_prob = 0.0
    lsh_attn_chunk_length = 4


class AxialPositionEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.axial_pos_shape = config.axial_pos_shape
        self.axial_pos_embds_dim = config.axial_pos_embds_dim
        self.dropout = config.hidden_dropout_prob
        self.least_common_mult_chunk_length = config.lsh_attn_chunk_length
        self.weights = nn.ParameterList()
        for axis, axial_pos_embd_dim in enumerate(self.axial_pos_embds_dim):
            ax_shape = [1] * len(self.axial_pos_shape)
            ax_shape[axis] = self.axial_pos_shape[axis]
            ax_shape = tuple(ax_shape) + (axial_pos_embd_dim,)
            self.weights.append(nn.Parameter(torch.ones(ax_shape, dtype=torch.float32) * (axis + 1)))

    def forward(self, position_ids):
        batch_size = position_ids.shape[0]
        sequence_length = position_ids.shape[1]

        broadcasted_weights = [
            weight.expand((batch_size,) + self.axial_pos_shape + weight.shape[-1:]) for weight in self.weights
        ]

        if self.training is True:
            if reduce(mul, self.axial_pos_shape) != sequence_length:
                raise ValueError(f"If training, make sure that config.axial_pos_shape factors: {self.axial_pos_shape}"
                                 f" multiply to sequence length. Got prod({self.axial_pos_shape}) != {sequence_length}")
            position_encodings = torch.cat(
                [torch.reshape(weight, (batch_size, sequence_length, -1)) for weight in broadcasted_weights],
                dim=-1,
            )
        else:
            if reduce(mul, self.axial_pos_shape) < sequence_length:
                raise ValueError(
                    f"Make sure that config.axial_pos_shape factors: {self.axial_pos_shape} multiply at least to "
                    f"max(sequence_length, least_common_mult_chunk_length): max({sequence_length}, "
                    f"{self.least_common_mult_chunk_length})."
                )
            max_position_id = position_ids.max().item()
            axial_h, axial_w = self.axial_pos_shape
            torch_compilable_check(max_position_id >= 0, "Axial position id underflow.")
            torch_compilable_check(
                max_position_id < axial_h * axial_w,
                "Position id exceeds axial_pos_shape[0] * axial_pos_shape[1].",
            )
            required_pos_encodings_columns = (max_position_id + axial_w) // axial_w

            # cut to columns that are needed
            position_encodings = torch.cat(
                [weight[:, :required_pos_encodings_columns] for weight in broadcasted_weights], dim=-1
            )
            position_encodings = torch.reshape(position_encodings, (batch_size, -1, position_encodings.shape[-1]))

            # select correct position encodings
            position_encodings = torch.cat(
                [
                    torch.index_select(position_encodings[i], 0, position_ids[i]).unsqueeze(0)
                    for i in range(batch_size)
                ],
                dim=0,
            )

        return position_encodings


model = torch.compile(AxialPositionEmbeddings(ReformerConfig()).eval())


def make():
    torch.manual_seed(0)
    return AxialPositionEmbeddings(ReformerConfig()).eval(), [
        (torch.arange(6).unsqueeze(0),),
        (torch.arange(3, 9).unsqueeze(0).repeat(2, 1),),
    ]
