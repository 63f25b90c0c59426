"""Install probes reached from forward: `synced_gpus = is_deepspeed_zero3_enabled() or is_fsdp_managed_module(self)`
calls an `lru_cache`d `is_torch_available()` that runs `importlib.util.find_spec` / `importlib.metadata.version`.

Source: huggingface/transformers@v5.5 (census version):src/transformers/utils/import_utils.py (`_is_package_available`,
`is_torch_available`, `is_torch_distributed_available` without the compile-constant marker) and
src/transformers/models/wav2vec2/modeling_wav2vec2.py:695 (the synced_gpus line)
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): "Skipped function call ... audio models call
importlib.util.find_spec during forward()" -- Wav2Vec2Model, HubertModel, SEWModel, UniSpeechModel, WavLMModel ...
eval+train at `import_utils.py:50` via `synced_gpus = is_deepspeed_zero3_enabled() or is_fsdp_managed_module(self)`.
Kept: the probe chain and the encoder loop using synced_gpus.
Simplified: `packaging.version` is replaced by a tuple parse; encoder layers are Linear+ReLU.
Torch 2.13 logs no graph break for this chain (the census was measured with torch 2.10), so the program is a
negative here.
"""
import importlib.metadata
import importlib.util
from functools import lru_cache

import torch
from torch import nn


def _is_package_available(pkg_name, return_version=False):
    """Check if `pkg_name` exist, and optionally try to get its version"""
    spec = importlib.util.find_spec(pkg_name)
    package_exists = spec is not None
    package_version = "N/A"
    if package_exists and return_version:
        try:
            package_version = importlib.metadata.version(pkg_name)
        except importlib.metadata.PackageNotFoundError:
            package_exists = False
    if return_version:
        return package_exists, package_version
    return package_exists


def _parse(v):
    return tuple(int(p) for p in v.split("+")[0].split(".")[:2])



@lru_cache
def is_torch_available():
    is_available, torch_version = _is_package_available("torch", return_version=True)
    return is_available and _parse(torch_version) >= (2, 6)


@lru_cache
def is_torch_distributed_available():
    if not is_torch_available():
        return False
    import torch

    return torch.distributed.is_available()


_hf_deepspeed_config_weak_ref = None


def is_deepspeed_zero3_enabled():
    if _hf_deepspeed_config_weak_ref is not None and _hf_deepspeed_config_weak_ref() is not None:
        return _hf_deepspeed_config_weak_ref().is_zero3()
    else:
        return False


def is_fsdp_managed_module(module):
    """Check if a module is managed by FSDP (1 or 2)."""
    if not is_torch_distributed_available():
        return False
    if getattr(module, "_is_fsdp_managed_module", False):
        return True
    from torch.distributed.fsdp import FullyShardedDataParallel

    return isinstance(module, FullyShardedDataParallel)


class Wav2Vec2Encoder(nn.Module):
    def __init__(self, hidden=4, num_layers=2):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(num_layers)])
        self.layer_norm = nn.LayerNorm(hidden)

    def forward(self, hidden_states):
        hidden_states = self.layer_norm(hidden_states)
        synced_gpus = is_deepspeed_zero3_enabled() or is_fsdp_managed_module(self)
        for layer in self.layers:
            skip_the_layer = False
            if not skip_the_layer or synced_gpus:
                hidden_states = hidden_states + torch.relu(layer(hidden_states))
        return hidden_states


encoder = torch.compile(Wav2Vec2Encoder().eval())


def make():
    torch.manual_seed(0)
    return Wav2Vec2Encoder().eval(), [(torch.randn(1, 5, 4),)]
