"""assume_constant_result on a module method, with `self.device = x.device` in forward.

Source: pytorch/pytorch#127509 (https://github.com/pytorch/pytorch/issues/127509)
Kept: the reporter's Module: a tensor attribute `y`, the
`@torch._dynamo.assume_constant_result` method `check` that returns
`self.y.item() == 1`, the attribute store `self.device = x.device` in forward
(which makes Dynamo treat the module as unspecialized), the branch on
`self.check()`, and `torch.compile(model)`.
Simplified: nothing but the two values of `y` so both branches run.
"""
import torch


class Module(torch.nn.Module):
    def __init__(self, y):
        super().__init__()
        self.y = y

    @torch._dynamo.assume_constant_result
    def check(self):
        return self.y.item() == 1

    def forward(self, x):
        # This line leads to module obj being tracked as UnspecializedNNModuleVariable in dynamo
        self.device = x.device

        if self.check():
            return x + 1
        else:
            return x + 2


def main():
    model = Module(torch.tensor([1]))
    x = torch.tensor(1)
    model(x)
    return torch.compile(model)(x)


def make():
    torch.manual_seed(0)
    x = torch.tensor(1)
    return Module(torch.tensor([1])), [(x,), (torch.tensor(3),)]
