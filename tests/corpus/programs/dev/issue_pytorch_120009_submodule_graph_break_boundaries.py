"""A submodule that calls `torch._dynamo.graph_break()` between two Linears, inside a compiled outer module.

Source: pytorch/pytorch#120009 (https://github.com/pytorch/pytorch/issues/120009)
The reporter's minified repro: the graph break in the submodule also splits the graphs at the
submodule's call boundaries (4 subgraphs instead of 2).
Kept: HasGraphBreak / Mod as posted, the printing custom_backend, `torch.compile(Mod(), backend=...)`.
Simplified: nothing but the print inside the backend (returns gm.forward silently).
"""
import torch


class HasGraphBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = torch.nn.Linear(5, 5)
        self.linear2 = torch.nn.Linear(5, 5)

    def forward(self, x):
        x = self.linear1(x)
        torch._dynamo.graph_break()
        return self.linear2(x)


class Mod(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.submodule = HasGraphBreak()

    def forward(self, x):
        x = torch.relu(x)
        x = self.submodule(x)
        return torch.relu(x)


def custom_backend(gm, _ei):
    return gm.forward


m = torch.compile(Mod(), backend=custom_backend)


def make():
    torch.manual_seed(0)
    return Mod(), [(torch.randn(3, 5),)]
