"""GM506 bad: a parameter-free module built in `forward`, whose `__init__` calls `Variable` (PSMNet).

`disparityregression` creates no parameter, but its `__init__` wraps a tensor in
`torch.autograd.Variable`, which Dynamo skips (GB0007, GM507's finding). Dynamo then retries
`__init__` as a frame of its own and fails on the module it has not initialized
(GB0119, at `super(...).__init__()`).
"""
import numpy as np
import torch
from torch import nn
from torch.autograd import Variable


class disparityregression(nn.Module):
    def __init__(self, maxdisp):
        super(disparityregression, self).__init__()
        self.disp = Variable(torch.Tensor(np.reshape(np.array(range(maxdisp)), [1, maxdisp, 1, 1])), requires_grad=False)

    def forward(self, x):
        disp = self.disp.repeat(x.size()[0], 1, x.size()[2], x.size()[3])
        return torch.sum(x * disp, 1)


class Head(nn.Module):
    def __init__(self, maxdisp: int = 4) -> None:
        super().__init__()
        self.maxdisp = maxdisp

    def forward(self, cost: torch.Tensor) -> torch.Tensor:
        pred = torch.softmax(cost, dim=1)
        return disparityregression(self.maxdisp)(pred)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Head(), [(torch.randn(2, 4, 3, 3),)]


compiled = torch.compile(Head())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
