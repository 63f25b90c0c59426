"""A patched wrapper module that copies the original's `__dict__` and bound methods, compiled fullgraph.

Source: pytorch/pytorch#137476 (https://github.com/pytorch/pytorch/issues/137476)
Kept: the reporter's `set_attrs_from_orig_model(cls_instance, mod, *func_names)`
(`cls_instance.__dict__.update(mod.__dict__)` and `setattr` of the original's
bound methods), PatchedMyModule calling the copied `self.resolve_input`, the
original MyModule whose `resolve_input` builds `torch.nn.Dropout(0.1)` inline
around its Linear, and `torch.compile(patched_module, fullgraph=True)`. This is
the module-patching pattern of quantization toolkits (the reported
`__self__ mismatch for bound method`).
Simplified: nothing (input_dim = output_dim = 1 as reported); a batched input
set is added.
"""
import torch
import torch.nn as nn


def set_attrs_from_orig_model(cls_instance, mod, *func_names):
    cls_instance.__dict__.update(mod.__dict__)
    if func_names is not None:
        for func in func_names:
            setattr(cls_instance, func, getattr(mod, func))


class PatchedMyModule(nn.Module):
    def __init__(self, mod):
        super().__init__()
        set_attrs_from_orig_model(self, mod, "resolve_input")

    def forward(self, x):
        x = self.resolve_input(x)
        return x


class MyModule(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.linear = nn.Linear(in_features=input_dim, out_features=output_dim)

    def resolve_input(self, x):
        x = torch.nn.Dropout(0.1)(self.linear(x))
        return x

    def forward(self, x):
        x = self.linear(x)
        return x


def main():
    module = MyModule(input_dim=1, output_dim=1)
    patched_module = PatchedMyModule(module)
    compiled_module = torch.compile(patched_module, fullgraph=True)
    input_tensor = torch.tensor([1.], dtype=torch.float)
    return compiled_module(input_tensor)


def make():
    torch.manual_seed(0)
    module = MyModule(input_dim=1, output_dim=1)
    patched_module = PatchedMyModule(module)
    return patched_module, [(torch.tensor([1.], dtype=torch.float),), (torch.randn(3, 1),)]
