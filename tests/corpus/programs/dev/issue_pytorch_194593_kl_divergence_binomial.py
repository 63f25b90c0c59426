"""`kl_divergence(Binomial, Binomial)` with tensor `total_count` in a compiled function.

Source: pytorch/pytorch#194593 (https://github.com/pytorch/pytorch/issues/194593)
Kept: the reporter's `fn(p_count, p_prob, q_count, q_prob)` building two
Binomial distributions and returning their KL divergence, and
`torch.compile(fn, backend="inductor", fullgraph=True)`; the reporter's inputs
(p_count 5 > q_count 3, whose eager answer is inf).
Simplified: a second input set with equal counts added.
"""
import torch
from torch.distributions import Binomial, kl_divergence


def fn(p_count, p_prob, q_count, q_prob):
    return kl_divergence(
        Binomial(total_count=p_count, probs=p_prob),
        Binomial(total_count=q_count, probs=q_prob),
    )


compiled = torch.compile(fn, backend="inductor", fullgraph=True)


def make():
    torch.manual_seed(0)
    args = (
        torch.tensor([5.0]),
        torch.tensor([0.2]),
        torch.tensor([3.0]),
        torch.tensor([0.4]),
    )
    same = (
        torch.tensor([4.0]),
        torch.tensor([0.2]),
        torch.tensor([4.0]),
        torch.tensor([0.4]),
    )
    return fn, [args, same]
