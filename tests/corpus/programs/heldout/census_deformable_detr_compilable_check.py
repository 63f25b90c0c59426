"""Deformable DETR multiscale attention validates shapes with transformers' `torch_compilable_check`
(`torch._check` while compiling, a raise in eager).

Source: huggingface/transformers@v5.23.0:src/transformers/models/deformable_detr/modeling_deformable_detr.py:590-610
and src/transformers/utils/import_utils.py:1947-1995 (torch_compilable_check)
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10, transformers 5.5): DeformableDetrModel,
LwDetrModel ... broke at `import_utils.py:1502 torch._check_with(error_type, cond, msg_callable)`; the 5.23
helper checks `is_tracing()` first.
Kept: the helper's env switch, tracing branch (`torch._check_tensor_all`/`torch._check`), msg_callable
wrapping and `torch._check_with`; the call site summing `height * width` over `spatial_shapes_list`.
Simplified: the attention body is a Linear on the encoder states.
"""
import os

import torch
from torch import nn


def is_tracing(tensor=None):
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


def torch_compilable_check(cond, msg, error_type=ValueError):
    if os.getenv("TRANSFORMERS_DISABLE_TORCH_CHECK", "0") == "1":
        return
    if is_tracing():
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
        else:
            torch._check(cond)
        return
    if not callable(msg):
        def msg_callable():
            return msg
    else:
        msg_callable = msg
    if callable(cond):
        cond = cond()
    if isinstance(cond, torch.Tensor):
        torch._check_tensor_all_with(error_type, cond, msg_callable)
    else:
        torch._check_with(error_type, cond, msg_callable)


class DeformableDetrMultiscaleDeformableAttention(nn.Module):
    def __init__(self, d_model=4):
        super().__init__()
        self.value_proj = nn.Linear(d_model, d_model)

    def forward(self, hidden_states, encoder_hidden_states, spatial_shapes_list):
        batch_size, num_queries, _ = hidden_states.shape
        batch_size, sequence_length, _ = encoder_hidden_states.shape
        total_elements = sum(height * width for height, width in spatial_shapes_list)
        torch_compilable_check(
            total_elements == sequence_length,
            "Make sure to align the spatial shapes with the sequence length of the encoder hidden states",
        )
        value = self.value_proj(encoder_hidden_states)
        return hidden_states + value.mean(dim=1, keepdim=True)


attn = torch.compile(DeformableDetrMultiscaleDeformableAttention())


def make():
    torch.manual_seed(0)
    return DeformableDetrMultiscaleDeformableAttention(), [
        (torch.randn(1, 3, 4), torch.randn(1, 6, 4), [(2, 2), (1, 2)]),
    ]
