"""A module that converts a sparse CSR input to COO with `x.to_sparse_coo()`.

Source: https://github.com/pytorch/pytorch/issues/169119
The reporter's MyModel / my_model_function / GetInput, compiled with
backend="cudagraphs", fullgraph=True, dynamic=False.
Kept: the three functions and the CSR indices/values as posted.
Simplified: CPU instead of cuda, so the compile uses backend="eager"; GetInput's truncated
tail is completed as `torch.sparse_csr_tensor(..., size=(3, 3))`.
"""
# -*- coding: utf-8 -*-
import torch
import torch.nn as nn

# ================== Model ==================

class MyModel(nn.Module):
    def __init__(self):
        super(MyModel, self).__init__()

    def forward(self, x):
        # x: sparse CSR tensor
        # Convert CSR to COO
        return x.to_sparse_coo()

def my_model_function():
    return MyModel()

def GetInput():
    # Create a sparse CSR tensor on CPU
    crow_indices = torch.tensor([0, 2, 4, 5], dtype=torch.int64)
    col_indices = torch.tensor([1, 2, 0, 2, 2], dtype=torch.int64)
    values = torch.tensor([1., 2., 0., 3., 4.], dtype=torch.float32)
    return torch.sparse_csr_tensor(crow_indices, col_indices, values, size=(3, 3))


def run():
    model = my_model_function()
    compiled = torch.compile(model, backend="eager", fullgraph=True, dynamic=False)
    return compiled(GetInput())


def make():
    torch.manual_seed(0)
    return my_model_function(), [(GetInput(),)]
