"""accelerate big-model dispatch hooks: `add_hook_to_module` replaces each submodule's `forward` with `functools.update_wrapper(functools.partial(new_forward, module), old_forward)`, and `AlignDevicesHook.pre_forward` / `post_forward` find the input device (`find_device([args, kwargs])`) and move args, kwargs and outputs with `send_to_device`; hooks are chained with `SequentialHook` (no break expected).

Source: huggingface/accelerate@05daa80d138c0b9024517739085929864f5745e6:src/accelerate/hooks.py:40-200,230-330
Also: src/accelerate/utils/operations.py (send_to_device, honor_type,
is_namedtuple, find_device).
Kept: ModelHook, SequentialHook, add_hook_to_module (append / SequentialHook
chaining, GraphModuleImpl check, new_forward with the no_grad branch),
remove_hook_from_module, AlignDevicesHook.__init__ / pre_forward /
post_forward for `offload=False`; send_to_device, honor_type, is_namedtuple,
find_device verbatim (npu/xpu checks are False on this machine).
Simplified: init_hook does not move weights (they already live on the
execution device, CPU); the offload branches of pre/post_forward are dropped;
a second user hook (a ModelHook subclass with `no_grad = True` that scales the
output) is appended to show chaining.
"""
import functools
from typing import Dict, List, Mapping, Optional, Union

import torch
import torch.nn as nn

_accelerate_added_attributes = ["to", "cuda", "npu", "xpu", "mlu", "sdaa", "musa"]


def is_namedtuple(data):
    data_type = type(data)
    bases = data_type.__bases__
    if len(bases) != 1 or bases[0] != tuple:
        return False
    fields = getattr(data_type, "_fields", None)
    if not isinstance(fields, tuple):
        return False
    return all(isinstance(member, str) for member in fields)


def honor_type(obj, generator):
    # Some objects may not be able to instantiate from a generator directly
    if is_namedtuple(obj):
        return type(obj)(*list(generator))
    else:
        return type(obj)(generator)


def send_to_device(tensor, device, non_blocking=False, skip_keys=None):
    if hasattr(tensor, "to"):
        try:
            return tensor.to(device, non_blocking=non_blocking)
        except TypeError:  # .to() doesn't accept non_blocking as kwarg
            return tensor.to(device)
    elif isinstance(tensor, (tuple, list)):
        return honor_type(
            tensor, (send_to_device(t, device, non_blocking=non_blocking, skip_keys=skip_keys) for t in tensor)
        )
    elif isinstance(tensor, Mapping):
        if isinstance(skip_keys, str):
            skip_keys = [skip_keys]
        elif skip_keys is None:
            skip_keys = []
        return type(tensor)(
            {
                k: t if k in skip_keys else send_to_device(t, device, non_blocking=non_blocking, skip_keys=skip_keys)
                for k, t in tensor.items()
            }
        )
    else:
        return tensor


def find_device(data):
    if isinstance(data, Mapping):
        for obj in data.values():
            device = find_device(obj)
            if device is not None:
                return device
    elif isinstance(data, (tuple, list)):
        for obj in data:
            device = find_device(obj)
            if device is not None:
                return device
    elif isinstance(data, torch.Tensor):
        return data.device


class ModelHook:
    no_grad = False

    def init_hook(self, module):
        return module

    def pre_forward(self, module, *args, **kwargs):
        return args, kwargs

    def post_forward(self, module, output):
        return output

    def detach_hook(self, module):
        return module


class SequentialHook(ModelHook):
    def __init__(self, *hooks):
        self.hooks = hooks

    def init_hook(self, module):
        for hook in self.hooks:
            module = hook.init_hook(module)
        return module

    def pre_forward(self, module, *args, **kwargs):
        for hook in self.hooks:
            args, kwargs = hook.pre_forward(module, *args, **kwargs)
        return args, kwargs

    def post_forward(self, module, output):
        for hook in self.hooks:
            output = hook.post_forward(module, output)
        return output

    def detach_hook(self, module):
        for hook in self.hooks:
            module = hook.detach_hook(module)
        return module


def add_hook_to_module(module: nn.Module, hook: ModelHook, append: bool = False):
    if append and (getattr(module, "_hf_hook", None) is not None):
        old_hook = module._hf_hook
        remove_hook_from_module(module)
        hook = SequentialHook(old_hook, hook)

    if hasattr(module, "_hf_hook") and hasattr(module, "_old_forward"):
        # If we already put some hook on this module, we replace it with the new one.
        old_forward = module._old_forward
    else:
        old_forward = module.forward
        module._old_forward = old_forward

    module = hook.init_hook(module)
    module._hf_hook = hook

    def new_forward(module, *args, **kwargs):
        args, kwargs = module._hf_hook.pre_forward(module, *args, **kwargs)
        if module._hf_hook.no_grad:
            with torch.no_grad():
                output = module._old_forward(*args, **kwargs)
        else:
            output = module._old_forward(*args, **kwargs)
        return module._hf_hook.post_forward(module, output)

    # Overriding a GraphModuleImpl forward freezes the forward call and later modifications on the graph will fail.
    # Reference: https://pytorch.slack.com/archives/C3PDTEV8E/p1705929610405409
    if "GraphModuleImpl" in str(type(module)):
        module.__class__.forward = functools.update_wrapper(functools.partial(new_forward, module), old_forward)
    else:
        module.forward = functools.update_wrapper(functools.partial(new_forward, module), old_forward)

    return module


def remove_hook_from_module(module: nn.Module, recurse=False):
    if hasattr(module, "_hf_hook"):
        module._hf_hook.detach_hook(module)
        delattr(module, "_hf_hook")

    if hasattr(module, "_old_forward"):
        if "GraphModuleImpl" in str(type(module)):
            module.__class__.forward = module._old_forward
        else:
            module.forward = module._old_forward
        delattr(module, "_old_forward")

    # Remove accelerate added warning hooks from dispatch_model
    for attr in _accelerate_added_attributes:
        module.__dict__.pop(attr, None)

    if recurse:
        for child in module.children():
            remove_hook_from_module(child, recurse)

    return module


class AlignDevicesHook(ModelHook):
    def __init__(
        self,
        execution_device: Optional[Union[int, str, torch.device]] = None,
        offload: bool = False,
        io_same_device: bool = False,
        weights_map: Optional[Mapping] = None,
        offload_buffers: bool = False,
        place_submodules: bool = False,
        skip_keys: Optional[Union[str, List[str]]] = None,
        tied_params_map: Optional[Dict[int, Dict[torch.device, torch.Tensor]]] = None,
    ):
        self.execution_device = execution_device
        self.offload = offload
        self.io_same_device = io_same_device
        self.weights_map = weights_map
        self.offload_buffers = offload_buffers
        self.place_submodules = place_submodules
        self.skip_keys = skip_keys

        # Will contain the input device when `io_same_device=True`.
        self.input_device = None
        self.param_original_devices = {}
        self.buffer_original_devices = {}
        self.tied_params_names = set()
        self.tied_params_map = tied_params_map

    def pre_forward(self, module, *args, **kwargs):
        if self.io_same_device:
            self.input_device = find_device([args, kwargs])

        return send_to_device(args, self.execution_device), send_to_device(
            kwargs, self.execution_device, skip_keys=self.skip_keys
        )

    def post_forward(self, module, output):
        if self.io_same_device and self.input_device is not None:
            output = send_to_device(output, self.input_device, skip_keys=self.skip_keys)

        return output


class ScaleOutputHook(ModelHook):
    no_grad = True

    def __init__(self, scale):
        self.scale = scale

    def post_forward(self, module, output):
        return output * self.scale


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, hidden_states, attention_mask=None):
        h = self.fc(self.ln(hidden_states))
        if attention_mask is not None:
            h = h * attention_mask[..., None]
        return hidden_states + h


class Model(nn.Module):
    def __init__(self, dim=8, n_layers=2):
        super().__init__()
        self.embed = nn.Linear(4, dim)
        self.layers = nn.ModuleList([Block(dim) for _ in range(n_layers)])
        self.head = nn.Linear(dim, 3)

    def forward(self, x, attention_mask=None):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h, attention_mask=attention_mask)
        return {"logits": self.head(h)}


def dispatch(model):
    # dispatch_model(model, device_map={"": "cpu"}) attaches one AlignDevicesHook per module
    add_hook_to_module(model, AlignDevicesHook(execution_device="cpu", io_same_device=True))
    for layer in model.layers:
        add_hook_to_module(layer, AlignDevicesHook(execution_device="cpu", skip_keys="past_key_values"))
    add_hook_to_module(model.head, ScaleOutputHook(0.5), append=True)
    add_hook_to_module(model.head, AlignDevicesHook(execution_device="cpu"), append=True)
    return model


model = torch.compile(dispatch(Model()))


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 4)
    mask = torch.ones(2, 5)
    return dispatch(Model()), [(x,), (x, mask)]
