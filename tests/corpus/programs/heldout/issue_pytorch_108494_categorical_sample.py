"""Sampling from `torch.distributions.Categorical` inside a fullgraph-compiled function.

Source: pytorch/pytorch#108494 (https://github.com/pytorch/pytorch/issues/108494)
The reporter compiles a function that builds a Categorical from fixed probabilities and samples from
it (`@torch.compile(fullgraph=True, backend='inductor')`), and gets `call_method SizeVariable() numel`
from Categorical.sample's `torch.multinomial(probs_2d, sample_shape.numel(), True)`.
Kept: the function as posted (Categorical built inside, `cat.sample()` returned).
Simplified: the decorator drops fullgraph=True so the run continues past a break.
"""
import torch


@torch.compile(backend="inductor")
def fn():
    cat = torch.distributions.categorical.Categorical(torch.tensor([0.1, 0.2, 0.7]))  # seems to use torch.multinomial under the hood
    return cat.sample()


def make():
    torch.manual_seed(0)
    return fn._torchdynamo_orig_callable, [()]
