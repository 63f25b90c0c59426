"""Aliasing check in forward: `x.data_ptr() == x.detach().data_ptr()` and stride/shape equality folded into a long tensor.

Source: https://github.com/pytorch/pytorch/issues/165408
Kept: the report's MyModel.forward (`original = x`, `detached = x.detach()`,
`same_data = (original.data_ptr() == detached.data_ptr() and original.stride()
== detached.stride() and original.shape == detached.shape)`), returning the
check as a long tensor next to the input; compiled as the report does.
Simplified: the report's environment printing is dropped and the cut-off
tail of the excerpt is completed with `torch.tensor(same_data, dtype=torch.long)`;
pytorch/pytorch#179347 later taught Dynamo this detach-alias comparison.
"""
import torch
from torch import nn


class MyModel(nn.Module):
    def forward(self, x):
        original = x
        detached = x.detach()
        same_data = (
            original.data_ptr() == detached.data_ptr()
            and original.stride() == detached.stride()
            and original.shape == detached.shape
        )
        return torch.tensor(same_data, dtype=torch.long, device=x.device), x * 2


compiled = torch.compile(MyModel(), fullgraph=True)


def make():
    torch.manual_seed(0)
    return MyModel(), [(torch.randn(3, 4),), (torch.randn(4, 3).t(),)]
