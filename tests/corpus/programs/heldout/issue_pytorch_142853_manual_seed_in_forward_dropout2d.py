"""`torch.manual_seed(0)` at the top of forward, then an `nn.Dropout{dim}d` built with `eval`.

Source: pytorch/pytorch#142853 (https://github.com/pytorch/pytorch/issues/142853)
Kept: the reporter's Model (`self.dropout = eval(f"nn.Dropout{dim}d(p=0.5)")`
in `__init__`, `forward` reseeding with `torch.manual_seed(0)` before the
dropout), `run_test` building the model, running it eagerly and through
`torch.compile(model)`.
Simplified: the module-level `config.fallback_random = True` (process-wide
inductor state) is left out; one dim (2) instead of the loop over 1/2/3;
spatial size 256 -> 8; CPU only.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):

    def __init__(self, dim):
        super().__init__()
        self.dropout = eval(f"nn.Dropout{dim}d(p=0.5)")

    def forward(self, x):
        torch.manual_seed(0)
        x = self.dropout(x)
        return x


def run_test(dim, device):
    torch.manual_seed(0)
    shape = [1, 3] + [8] * dim
    inputs = torch.randn(*shape).to(device)

    model = Model(dim).to(device)
    output = model(inputs)
    c_model = torch.compile(model)
    c_output = c_model(inputs)

    print(torch.allclose(output, c_output, 1.3e-6, 1e-5))


def make():
    torch.manual_seed(0)
    inputs = torch.randn(1, 3, 8, 8)
    return Model(2), [(inputs,)]
