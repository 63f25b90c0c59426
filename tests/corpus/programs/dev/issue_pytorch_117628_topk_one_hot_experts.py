"""MoE-style routing: topk over router scores, then `F.one_hot(selected_experts, 32)` and a sum.

Source: pytorch/pytorch#117628 (https://github.com/pytorch/pytorch/issues/117628)
Kept: the reporter's module fmod verbatim (sets `self.num_experts`/`self.top_k` inside forward,
`torch.topk(x, 4, dim=-1)`, `one_hot(selected_experts, 32)`, `.sum()`), inspected with
`torch._dynamo.explain` as in the report (the report passes an undefined `f`; the module `m` is meant).
Simplified: nothing else; input (1, 32, 32) kept.
"""
import torch
from torch import nn
import torch._dynamo as dynamo


class fmod(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        self.num_experts = 32
        self.top_k = 4
        routing_weights, selected_experts = torch.topk(x, 4, dim=-1)
        one_hot_encoded = torch.nn.functional.one_hot(selected_experts, 32)  # .permute(2, 1, 0)
        return one_hot_encoded.sum()


def explain():
    m = fmod()
    x = torch.randn((1, 32, 32))
    explanation = dynamo.explain(m)(x)
    print(explanation)


def make():
    torch.manual_seed(0)
    return fmod(), [(torch.randn((1, 32, 32)),)]
