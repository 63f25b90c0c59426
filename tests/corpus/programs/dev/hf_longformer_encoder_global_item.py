"""Longformer encoder: `.item()` on "any global attention" before the layer loop.

Source: huggingface/transformers@v5.23.0:src/transformers/models/longformer/modeling_longformer.py:1162-1215
Kept: the masked/global index computation, `.flatten().any().item()`, the
per-layer loop with the tuple accumulators and `layer_outputs[0]`.
Simplified: the sliding-window layer is a linear layer that mixes in the
global tokens; 2 layers, hidden size 8.
"""
import torch
from torch import nn


class LongformerLayer(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)

    def forward(self, hidden_states, attention_mask=None, is_index_masked=None,
                is_index_global_attn=None, is_global_attn=None, output_attentions=False):
        out = self.dense(hidden_states).masked_fill(is_index_masked[..., None], 0.0)
        if is_global_attn:
            glob = (hidden_states * is_index_global_attn[..., None]).sum(1, keepdim=True)
            out = out + glob
        return (out, out.mean(-1)) if output_attentions else (out,)


class LongformerEncoder(nn.Module):
    def __init__(self, hidden=8, layers=2):
        super().__init__()
        self.layer = nn.ModuleList([LongformerLayer(hidden) for _ in range(layers)])

    def forward(self, hidden_states, attention_mask=None, output_attentions=False, output_hidden_states=False):
        is_index_masked = attention_mask < 0
        is_index_global_attn = attention_mask > 0

        # Record `is_global_attn == True` to enable ONNX export
        is_global_attn = is_index_global_attn.flatten().any().item()

        all_hidden_states = () if output_hidden_states else None
        all_attentions = () if output_attentions else None

        for idx, layer_module in enumerate(self.layer):
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            layer_outputs = layer_module(
                hidden_states,
                attention_mask=attention_mask,
                is_index_masked=is_index_masked,
                is_index_global_attn=is_index_global_attn,
                is_global_attn=is_global_attn,
                output_attentions=output_attentions,
            )
            hidden_states = layer_outputs[0]
            if output_attentions:
                all_attentions = all_attentions + (layer_outputs[1],)
        return tuple(v for v in [hidden_states, all_hidden_states, all_attentions] if v is not None)


encoder = torch.compile(LongformerEncoder())


def make():
    torch.manual_seed(0)
    hidden = torch.randn(2, 6, 8)
    local = torch.zeros(2, 6)
    with_global = local.clone()
    with_global[:, 0] = 1
    return LongformerEncoder(), [(hidden, local), (hidden, with_global)]
