"""transformers' `capture_outputs` decorator: registry lookup, ContextVar collector, forward hooks, try/finally.

Source: huggingface/transformers@v5.23.0:src/transformers/utils/output_capturing.py:38-153,310-385
Kept: _CanRecordRegistry (a dict subclass keyed on str(model.__class__)),
CompileableContextVar with its is_compiling switch, the forward hook that
appends into the active collector, and the wrapper: return_dict pop, the
recordable_keys dict comprehension, hook installation, set/reset around the
forward in try/finally, the tuple injection of collected outputs.
Simplified: one decoder layer class recorded for hidden_states and
attentions; a plain dict as the model output; hidden size 8.
"""
from contextvars import ContextVar
from functools import wraps

import torch
from torch import nn


def is_torchdynamo_compiling():
    return torch.compiler.is_compiling()


class _CanRecordRegistry(dict):
    def __setitem__(self, model, can_record_outputs):
        super().__setitem__(str(model.__class__), can_record_outputs)

    def get(self, model):
        return super().get(str(model.__class__)) or {}


_CAN_RECORD_REGISTRY = _CanRecordRegistry()


class CompileableContextVar:
    def __init__(self, name):
        self.context_var = ContextVar(name, default=None)
        self.global_var = None
        self.compiling = False

    def get(self):
        if self.compiling:
            return self.global_var
        else:
            return self.context_var.get()

    def set(self, value):
        if is_torchdynamo_compiling():
            self.global_var = value
            self.compiling = True
            return None
        else:
            return self.context_var.set(value)

    def reset(self, token):
        if self.compiling or token is None:
            self.global_var = None
            self.compiling = False
        else:
            self.context_var.reset(token)


_active_collector = CompileableContextVar("output_collector")


def install_output_capuring_hook(module, key, index):
    def output_capturing_hook(module, args, output):
        collected_outputs = _active_collector.get()
        if collected_outputs is None or key not in collected_outputs.keys():
            return
        if key == "hidden_states" and len(collected_outputs[key]) == 0:
            collected_outputs[key].append(args[0])
        if not isinstance(output, tuple):
            collected_outputs[key].append(output)
        elif output[index] is not None:
            collected_outputs[key].append(output[index])

    module.register_forward_hook(output_capturing_hook)


def maybe_install_capturing_hooks(model):
    if getattr(model, "_output_capturing_hooks_installed", False):
        return
    for key, target_class in _CAN_RECORD_REGISTRY.get(model).items():
        for module in model.modules():
            if isinstance(module, target_class):
                install_output_capuring_hook(module, key, 0 if "hidden_states" in key else 1)
    setattr(model, "_output_capturing_hooks_installed", True)


def capture_outputs(func):
    @wraps(func)
    def wrapper(self, *args, **kwargs):
        return_dict = kwargs.pop("return_dict", getattr(self.config, "return_dict", True))
        capturable_flags = _CAN_RECORD_REGISTRY.get(self)
        recordable_keys = {
            f"output_{k}": kwargs.get(f"output_{k}", getattr(self.config, f"output_{k}", False))
            for k in capturable_flags
        }
        collected_outputs = {k.replace("output_", ""): [] for k, v in recordable_keys.items() if v}
        if len(collected_outputs) > 0:
            maybe_install_capturing_hooks(self)
        output_token = _active_collector.set(collected_outputs)
        try:
            outputs = func(self, *args, **kwargs)
        finally:
            _active_collector.reset(output_token)
        for key in collected_outputs:
            outputs[key] = tuple(collected_outputs[key])
        if return_dict is False:
            outputs = tuple(outputs.values())
        return outputs

    return wrapper


class Config:
    return_dict = True
    output_hidden_states = False
    output_attentions = False


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Linear(8, 8)

    def forward(self, hidden_states):
        out = self.mlp(hidden_states)
        return out, out.softmax(-1)


class MixtralModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(2)])

    @capture_outputs
    def forward(self, hidden_states, **kwargs):
        for layer in self.layers:
            hidden_states = layer(hidden_states)[0]
        return {"last_hidden_state": hidden_states}


_CAN_RECORD_REGISTRY[MixtralModel(Config())] = {"hidden_states": DecoderLayer, "attentions": DecoderLayer}

model = torch.compile(MixtralModel(Config()))


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8)
    return MixtralModel(Config()), [(x,)]
