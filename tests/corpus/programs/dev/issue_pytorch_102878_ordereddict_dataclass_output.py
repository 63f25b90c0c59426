"""A model-output dataclass that subclasses OrderedDict (diffusers' BaseOutput shape), built in a compiled fn.

Source: pytorch/pytorch#102878 (https://github.com/pytorch/pytorch/issues/102878)
Kept: the maintainer's simpler repro from the thread verbatim: `@dataclass class
Transformer2DModelOutput(OrderedDict)` with one `sample` field, `fn` returning it, and
`torch.compile(fn, backend="eager", fullgraph=True)`.
Simplified: the first repro's `diffusers.utils.BaseOutput` base is the plain OrderedDict of the
simpler version (no diffusers import).
"""
from collections import OrderedDict
from dataclasses import dataclass

import torch


@dataclass
class Transformer2DModelOutput(OrderedDict):
    """
    Args:
        sample (`torch.FloatTensor` of shape `(batch_size, num_channels, height, width)`):
            Hidden states conditioned on `encoder_hidden_states` input.
    """

    sample: torch.FloatTensor


def fn(x):
    return Transformer2DModelOutput(sample=x)


opt_fn = torch.compile(fn, backend="eager", fullgraph=True)


def make():
    torch.manual_seed(0)
    x = torch.randn(4)
    return fn, [(x,)]
