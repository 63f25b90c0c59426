"""Forward hooks on a module and on each child call a `torch._dynamo.disable()`d helper.

Source: pytorch/pytorch#135410 (https://github.com/pytorch/pytorch/issues/135410)
Kept: the reporter's MyModule (dropout -> fc0 -> fc1, `residual + ... * 0.5`),
the `@torch._dynamo.disable()` helper `fn` that the `collect` forward hook calls
before `tmp.add(1)`, the hook registered on the module itself and on every child
via `my_mod.children()`, and `my_mod = torch.compile(my_mod)`. The issue is
about DeepSpeed ZeRO offload hooks whose graph breaks push whole modules to eager.
Simplified: 256 features -> 8; the TORCH_LOGS/env setup lines are dropped.
"""
import torch


class MyModule(torch.nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fc0 = torch.nn.Linear(8, 8, bias=False)
        self.fc1 = torch.nn.Linear(8, 8, bias=False)
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, data, residual):
        output = residual + self.fc1(self.fc0(self.dropout(data))) * 0.5
        return output


@torch._dynamo.disable()
def fn(t):
    return t.sin()


def collect(m, i, o):
    tmp = fn(o)
    return tmp.add(1)


def build():
    my_mod = MyModule()
    my_mod.register_forward_hook(collect)
    for child in my_mod.children():
        child.register_forward_hook(collect)
    return my_mod


def main():
    my_mod = build()
    my_mod = torch.compile(my_mod)
    data = torch.randn(4, 8)
    residual = torch.randn(4, 8)
    return my_mod(data, residual)


def make():
    torch.manual_seed(0)
    my_mod = build()
    data = torch.randn(4, 8)
    residual = torch.randn(4, 8)
    return my_mod, [(data, residual)]
