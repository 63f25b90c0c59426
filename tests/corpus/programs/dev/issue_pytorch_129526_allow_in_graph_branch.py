"""`@torch.compiler.allow_in_graph` on a function that branches on `x.sum() > 0` still breaks, because
the function runs under FakeTensorMode while Dynamo captures the graph.

Source: https://github.com/pytorch/pytorch/pull/129526 (the example in the description)
Kept: composite_op, Toy, my_compiler and `torch.compile(toy, backend=my_compiler)` verbatim.
Simplified: my_compiler does not print.
"""
from typing import List

import torch


@torch.compiler.allow_in_graph
def composite_op(x):
    if x.sum() > 0:
        return torch.sigmoid(x)
    else:
        return torch.relu(x)


class Toy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(10, 10)

    def forward(self, x):
        x = self.fc1(x)
        x = composite_op(x)
        return x


graph_cnt = 0
def my_compiler(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor]):
    global graph_cnt
    graph_cnt += 1
    return gm  # return a python callable


toy = Toy()
compiled_mod = torch.compile(toy, backend=my_compiler)


def make():
    torch.manual_seed(0)
    return Toy(), [(torch.randn(12, 10),), (torch.randn(12, 10) - 5.0,)]
