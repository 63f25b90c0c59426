"""NLLB-MoE decoder: `synced_gpus = is_deepspeed_zero3_enabled() or is_fsdp_managed_module(self)` and
`if not skip_the_layer or synced_gpus:` where `skip_the_layer` is a tensor comparison in training.

Source: huggingface/transformers@v5.23.0:src/transformers/models/nllb_moe/modeling_nllb_moe.py:825-850,
src/transformers/integrations/deepspeed.py:267-288, src/transformers/distributed/fsdp.py:54-65
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): NllbMoeModel train (LayerDrop) and
the same synced_gpus pattern in Hubert/Wav2Vec2/SEW/UniSpeech (`modeling_hubert.py:455 if not skip_the_layer or
synced_gpus:`, `import_utils.py:50`).
Kept: the deepspeed weakref global and `is_deepspeed_zero3_enabled`, `is_fsdp_managed_module` (distributed
availability, the FSDP2 attribute, the function-local FSDP import and isinstance), the decoder loop.
Simplified: decoder layers are Linear+ReLU; no MoE routing.
"""
import torch
from torch import nn

_hf_deepspeed_config_weak_ref = None


def is_deepspeed_zero3_enabled():
    if _hf_deepspeed_config_weak_ref is not None and _hf_deepspeed_config_weak_ref() is not None:
        return _hf_deepspeed_config_weak_ref().is_zero3()
    else:
        return False


def is_torch_distributed_available():
    return torch.distributed.is_available()


def is_fsdp_managed_module(module):
    """Check if a module is managed by FSDP (1 or 2)."""
    if not is_torch_distributed_available():
        return False

    # FSDP2: attribute set by apply_fsdp2()
    if getattr(module, "_is_fsdp_managed_module", False):
        return True
    # FSDP1: wrapped by FullyShardedDataParallel
    from torch.distributed.fsdp import FullyShardedDataParallel

    return isinstance(module, FullyShardedDataParallel)


class NllbMoeDecoder(nn.Module):
    def __init__(self, hidden=8, num_layers=3, layerdrop=0.5):
        super().__init__()
        self.layerdrop = layerdrop
        self.layers = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(num_layers)])

    def forward(self, hidden_states):
        synced_gpus = is_deepspeed_zero3_enabled() or is_fsdp_managed_module(self)

        for idx, decoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://huggingface.co/papers/1909.11556 for description)
            skip_the_layer = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                skip_the_layer = dropout_probability < self.layerdrop
            if not skip_the_layer or synced_gpus:
                hidden_states = hidden_states + torch.relu(decoder_layer(hidden_states))
        return hidden_states


def train(model, batches):
    model.train()
    compiled = torch.compile(model)
    for x in batches:
        compiled(x).sum().backward()


def make():
    torch.manual_seed(0)
    return NllbMoeDecoder().train(), [(torch.randn(2, 3, 8),)]
