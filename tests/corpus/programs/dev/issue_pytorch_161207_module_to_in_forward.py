"""`self.to("cpu")` inside a compiled forward (accelerate's CPU-offload hook pattern).

Source: https://github.com/pytorch/pytorch/issues/161207
Kept: Mod with its single Linear, the `self.to("cpu")` after the projection, and `mod.compile(fullgraph=True)`.
Simplified: Linear(1024, 1024) is Linear(16, 16).
"""
import torch


class Mod(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        res = self.fc(x)
        self.to("cpu")
        return res


mod = Mod()
mod.compile(fullgraph=True)


def make():
    torch.manual_seed(0)
    return Mod(), [(torch.rand(1, 16),)]
