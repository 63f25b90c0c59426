"""Longformer encoder: `is_global_attn = is_index_global_attn.flatten().any().item()` decides extra outputs.

Source: huggingface/transformers@v5.23.0:src/transformers/models/longformer/modeling_longformer.py:1163-1200
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): LongformerModel eval+train,
`modeling_longformer.py:1194 is_global_attn = is_index_global_attn.flatten().any().item()`.
Kept: LongformerEncoder.forward's mask split, the `.item()` flag, the tuple accumulators keyed on it and
the per-layer call that receives `is_global_attn`.
Simplified: layers are Linear blocks that add a global summary when `is_global_attn` is true.
"""
import torch
from torch import nn


class LongformerLayer(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, attention_mask=None, is_index_masked=None, is_index_global_attn=None,
                is_global_attn=None):
        out = self.dense(hidden_states)
        if is_global_attn:
            out = out + hidden_states.mean(dim=1, keepdim=True)
        return (out,)


class LongformerEncoder(nn.Module):
    def __init__(self, hidden_size=8, num_layers=2):
        super().__init__()
        self.layer = nn.ModuleList([LongformerLayer(hidden_size) for _ in range(num_layers)])

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        is_index_masked = attention_mask < 0
        is_index_global_attn = attention_mask > 0

        # Record `is_global_attn == True` to enable ONNX export
        is_global_attn = is_index_global_attn.flatten().any().item()

        all_attentions = () if output_attentions else None
        all_global_attentions = () if (output_attentions and is_global_attn) else None

        for idx, layer_module in enumerate(self.layer):
            layer_outputs = layer_module(
                hidden_states,
                attention_mask=attention_mask,
                is_index_masked=is_index_masked,
                is_index_global_attn=is_index_global_attn,
                is_global_attn=is_global_attn,
            )
            hidden_states = layer_outputs[0]
        return hidden_states, all_global_attentions


encoder = torch.compile(LongformerEncoder())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 6, 8)
    local = torch.zeros(1, 6)
    with_global = torch.tensor([[1.0, 0, 0, 0, 0, 0]])
    return LongformerEncoder(), [(x, local), (x, with_global, True)]
