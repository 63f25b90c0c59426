"""hf_Reformer's `_init_attention_seed` (cuda generator probe, `torch.seed()`, `torch.manual_seed`) in forward.

Source: https://github.com/pytorch/pytorch/issues/101154
Kept: the reporter's MyModel (the hasattr/len probe on `torch.cuda.default_generators`, the CPU branch with
`int(torch.seed() % sys.maxsize)`, manual_seed, Linear + Dropout) and `torch.compile(backend="eager")(m)`.
Simplified: dropout p=0 so outputs are deterministic; `print_graph_breaks` config (removed) dropped.
"""
import sys

import torch
import torch.nn as nn


class MyModel(nn.Module):

    def __init__(self, p=0.0):
        super(MyModel, self).__init__()
        self.linear = torch.nn.Linear(5, 5)
        self.dropout = torch.nn.Dropout(p)

    def _init_attention_seed(self):
        """
        This function sets a new seed for the attention layer to make dropout deterministic for both forward calls: 1
        normal forward call and 1 forward call in backward to recalculate activations.
        """

        # randomize seeds
        # use cuda generator if available
        if hasattr(torch.cuda, "default_generators") and len(torch.cuda.default_generators) > 0:
            # GPU
            device_idx = torch.cuda.current_device()
            self.attention_seed = torch.cuda.default_generators[device_idx].seed()
        else:
            # CPU
            self.attention_seed = int(torch.seed() % sys.maxsize)

        torch.manual_seed(self.attention_seed)

    def forward(self, x):
        self._init_attention_seed()
        return self.dropout(self.linear(x))


m = MyModel()
opt_m = torch.compile(backend="eager")(m)


def make():
    torch.manual_seed(0)
    return MyModel(), [(torch.randn(4, 5),)]
