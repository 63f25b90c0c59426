"""`Wishart(df=<tensor>, covariance_matrix=...).mean` built inside a compiled function.

Source: pytorch/pytorch#194596 (https://github.com/pytorch/pytorch/issues/194596)
Kept: the reporter's `fn(df, covariance)` constructing the distribution from a
tensor-valued `df` and reading `.mean`, compiled with
`torch.compile(fn, backend="inductor", fullgraph=True)`.
Simplified: nothing.
"""
import torch
from torch.distributions import Wishart


def fn(df, covariance):
    return Wishart(df=df, covariance_matrix=covariance).mean


compiled = torch.compile(fn, backend="inductor", fullgraph=True)


def make():
    torch.manual_seed(0)
    df = torch.tensor(5.0)
    covariance = torch.eye(2)
    return fn, [(df, covariance)]
