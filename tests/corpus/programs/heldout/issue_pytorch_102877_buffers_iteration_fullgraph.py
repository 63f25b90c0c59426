"""A module iterates `self.buffers()` inside forward and is compiled with `fullgraph=True`.

Source: https://github.com/pytorch/pytorch/issues/102877 (fixed by pytorch/pytorch#102247)
Kept: MockModule verbatim (a registered buffer, a for loop over `self.buffers()` collecting
`buff.sum()`, the tuple return) and `torch.compile(mod, fullgraph=True)`.
Simplified: nothing; the call of the compiled module moved out of module level.
"""
import torch


class MockModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('my_buffer', torch.zeros(10, 10))

    def forward(self, x):
        outs = []
        for buff in self.buffers():
            outs.append(buff.sum())
        return outs[0], x


mod = MockModule()
opt_mod = torch.compile(mod, fullgraph=True)


def make():
    torch.manual_seed(0)
    return MockModule(), [(torch.randn(4),)]
