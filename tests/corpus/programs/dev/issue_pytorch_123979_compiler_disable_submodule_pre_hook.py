"""A submodule wrapped in `torch.compiler.disable` whose forward pre-hook is still traced.

Source: pytorch/pytorch#123979 (https://github.com/pytorch/pytorch/issues/123979)
Kept: the reporter's SimpleModel (layer0 -> layer1 Linears), the forward pre-hook
on layer0 returning `(args[0].sin().cos(),)`, `model.layer0 =
torch.compiler.disable(model.layer0)` to skip that layer (the motivating case is
skipping TP/SP hooks for DTensors), and `torch.compile(model)`.
Simplified: nothing beyond the input batch (4 features, a batch of 2 added).
"""
import torch


class SimpleModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer0 = torch.nn.Linear(4, 4)
        self.layer1 = torch.nn.Linear(4, 4)

    def forward(self, inp):
        z = self.layer0(inp)
        return self.layer1(z)


def hook(module, args):
    inp = args[0].sin().cos()
    return (inp,)


def build():
    model = SimpleModel()
    model.layer0.register_forward_pre_hook(hook)
    model.layer0 = torch.compiler.disable(model.layer0)
    return model


def main():
    model = build()
    opt_model = torch.compile(model)
    return opt_model(torch.randn((4,)))


def make():
    torch.manual_seed(0)
    model = build()
    return model, [(torch.randn((4,)),), (torch.randn((2, 4)),)]
