"""A model whose forward is just `self.rnn(x)` never reaches a custom backend: Dynamo breaks on nn.RNN.

Source: https://github.com/pytorch/pytorch/issues/116858
Kept: Model1 verbatim, the custom `compiler` backend and `torch.compile(model1, backend=compiler)` under no_grad.
Simplified: the backend does not print; Model2 (the control) is a separate negative program.
"""
import torch


class Model1(torch.nn.Module):
        def __init__(self):
                super().__init__()
                self.rnn = torch.nn.RNN(3, 3, 3)

        def forward(self, x):
                return self.rnn(x)


def compiler(gm, example_inputs):
        return gm


model1 = Model1()
cmodel1 = torch.compile(model1, backend=compiler)


def make():
        torch.manual_seed(0)
        return Model1(), [(torch.rand(1, 2, 3),)]
