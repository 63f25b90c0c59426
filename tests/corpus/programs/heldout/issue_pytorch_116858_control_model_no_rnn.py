"""The control model of the RNN report: `x*x` reaches the custom backend as one graph (no break).

Source: https://github.com/pytorch/pytorch/issues/116858
Kept: Model2 verbatim, the custom `compiler` backend and `torch.compile(model2, backend=compiler)`.
Simplified: the backend does not print.
"""
import torch


class Model2(torch.nn.Module):
        def forward(self, x):
                return x*x


def compiler(gm, example_inputs):
        return gm


model2 = Model2()
cmodel2 = torch.compile(model2, backend=compiler)


def make():
        return Model2(), [(torch.rand(1, 2, 3),)]
