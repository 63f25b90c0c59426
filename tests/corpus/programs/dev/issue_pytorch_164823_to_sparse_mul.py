"""A module that converts its dense input with `x.to_sparse()` and scales the sparse result.

Source: https://github.com/pytorch/pytorch/issues/164823
The maintainer's reduced repro in the thread: TestModel.forward returns `x.to_sparse() * 2`;
compiled with the default backend and compared against eager.
Kept: TestModel as posted and `torch.compile(model)`.
Simplified: 10x10 -> 4x4 input.
"""
import torch
import torch.nn as nn

class TestModel(nn.Module):
    def forward(self, x):
        x_sparse = x.to_sparse()
        return x_sparse * 2


def check():
    x = torch.randn(4, 4)
    model = TestModel()
    compiled_res = torch.compile(model)(x)
    eager_res = model(x)
    assert eager_res.to_dense().allclose(compiled_res.to_dense()), f"eager_res should be close to compiled_res"


def make():
    torch.manual_seed(0)
    return TestModel(), [(torch.randn(4, 4),)]
