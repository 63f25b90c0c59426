"""NLLB-MoE decoder in eval: `synced_gpus` is computed from module-level/distributed checks and
`skip_the_layer` stays the Python False (no tensor branch).

Source: huggingface/transformers@v5.23.0:src/transformers/models/nllb_moe/modeling_nllb_moe.py:825-850,
src/transformers/integrations/deepspeed.py:267-288, src/transformers/distributed/fsdp.py:54-65
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): NllbMoeModel eval is full_graph.
Kept: is_deepspeed_zero3_enabled, is_fsdp_managed_module and the decoder loop as in training.
Simplified: decoder layers are Linear+ReLU.
"""
import torch
from torch import nn

_hf_deepspeed_config_weak_ref = None


def is_deepspeed_zero3_enabled():
    if _hf_deepspeed_config_weak_ref is not None and _hf_deepspeed_config_weak_ref() is not None:
        return _hf_deepspeed_config_weak_ref().is_zero3()
    else:
        return False


def is_fsdp_managed_module(module):
    if not torch.distributed.is_available():
        return False
    if getattr(module, "_is_fsdp_managed_module", False):
        return True
    from torch.distributed.fsdp import FullyShardedDataParallel

    return isinstance(module, FullyShardedDataParallel)


class NllbMoeDecoder(nn.Module):
    def __init__(self, hidden=8, num_layers=2, layerdrop=0.1):
        super().__init__()
        self.layerdrop = layerdrop
        self.layers = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(num_layers)])

    def forward(self, hidden_states):
        synced_gpus = is_deepspeed_zero3_enabled() or is_fsdp_managed_module(self)
        for idx, decoder_layer in enumerate(self.layers):
            skip_the_layer = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                skip_the_layer = dropout_probability < self.layerdrop
            if not skip_the_layer or synced_gpus:
                hidden_states = hidden_states + torch.relu(decoder_layer(hidden_states))
        return hidden_states


decoder = torch.compile(NllbMoeDecoder().eval())


def make():
    torch.manual_seed(0)
    return NllbMoeDecoder().eval(), [(torch.randn(2, 3, 8),)]
