"""transformers' `@capture_outputs` forward wrapper: a registry dict subclass, a ContextVar wrapper,
lazy hook installation under a `threading.Lock`, and `try/finally` around the forward.

Source: huggingface/transformers@v5.23.0:src/transformers/utils/output_capturing.py:25-392
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): breaks at
`output_capturing.py:192 with _hook_installation_lock:` (AriaModel, PeAudioModel) and
`output_capturing.py:251 _active_collector.reset(output_token)` (SwitchTransformersModel); every MoE model
and both BigBirds go through this wrapper.
Kept: `_CanRecordRegistry`, `CompileableContextVar`, `install_output_capuring_hook`,
`maybe_install_capturing_hooks` with the lock, the wrapper's recordable_keys/collected_outputs logic,
set/reset around the call and the tuple injection.
Simplified: no PreTrainedModel recursion (one level of children), no hidden-state index selection,
outputs are a dict; the decorated model is two Linear layers.
"""
import threading
from contextvars import ContextVar
from functools import wraps

import torch
from torch import nn


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
        if torch.compiler.is_compiling():
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
        collected_outputs[key].append(output if not isinstance(output, tuple) else output[index])

    module.register_forward_hook(output_capturing_hook)


def install_all_output_capturing_hooks(model):
    capture_flags = _CAN_RECORD_REGISTRY.get(model)
    for name, module in model.named_children():
        for key, target_class in capture_flags.items():
            if isinstance(module, target_class):
                install_output_capuring_hook(module, key, 0)
    setattr(model, "_output_capturing_hooks_installed", True)


_hook_installation_lock = threading.Lock()


def maybe_install_capturing_hooks(model):
    if getattr(model, "_output_capturing_hooks_installed", False):
        return

    with _hook_installation_lock:
        if getattr(model, "_output_capturing_hooks_installed", False):
            return
        install_all_output_capturing_hooks(model)


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


class DecoderLayer(nn.Linear):
    pass


class TinyModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layer0 = DecoderLayer(4, 4)
        self.layer1 = DecoderLayer(4, 4)

    @capture_outputs
    def forward(self, hidden_states, **kwargs):
        hidden_states = self.layer1(torch.relu(self.layer0(hidden_states)))
        return {"last_hidden_state": hidden_states}


_CAN_RECORD_REGISTRY[TinyModel(Config())] = {"hidden_states": DecoderLayer}

model = torch.compile(TinyModel(Config()))


def _call_with_kwargs(m):
    """The sweep calls `compiled(**inputs)`: a flag picks `output_hidden_states`."""

    def run(hidden_states, output_hidden_states):
        return m(hidden_states, output_hidden_states=output_hidden_states)

    return run


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    return _call_with_kwargs(TinyModel(Config())), [(x, False), (x, True)]


