"""The `dynamo.explain` launch example: a `print("woo")` and `if b.sum() < 0:` in one function.

Source: https://github.com/pytorch/torchdynamo/pull/895
Kept: `toy_example` verbatim; the PR ran it through `explain`, here it is compiled with `torch.compile`.
Simplified: the custom `my_compiler` backend is dropped.
"""
import torch


def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    print("woo")
    if b.sum() < 0:
        b = b * -1
    return x * b


compiled = torch.compile(toy_example)


def make():
    return toy_example, [(torch.ones(10), torch.ones(10)), (torch.ones(10), -torch.ones(10))]
