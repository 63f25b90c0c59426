"""mistral-inference MoE layer: a Python loop over experts, each picking its tokens with `torch.where(selected_experts == i)`.

Source: mistralai/mistral-inference@2557e12d0e1878a1562ece30434820f80aa3e12a:src/mistral_inference/moe.py:1-32
Also: src/mistral_inference/transformer_layers.py:22-28,95-126,128-170 (maybe_lora,
FeedForward, RMSNorm, TransformerBlock's MoE wiring), src/mistral_inference/lora.py:12-75 (LoraArgs, LoRALinear)
Kept: MoeArgs, MoeLayer verbatim (topk gate, softmax in float, the per-expert
`torch.where` and the indexed `+=`), FeedForward built through maybe_lora
(LoRALinear with its load-state-dict hook), RMSNorm, and the feed-forward half
of TransformerBlock.forward.
Simplified: simple_parsing's Serializable dropped from the dataclasses; the
attention half of the block (xformers) is left out; dim 8, hidden 16, 4
experts, 2 per token, LoRA rank 2.
"""
import dataclasses
from functools import partial
from typing import List, NamedTuple, Optional, Type, Union

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass
class MoeArgs:
    num_experts: int
    num_experts_per_tok: int


@dataclasses.dataclass
class LoraArgs:
    rank: int
    scaling: float

    def __post_init__(self) -> None:
        assert self.rank > 0
        assert self.scaling > 0.0


class LoRALinear(nn.Module):
    """
    Implementation of:
        - LoRA: https://arxiv.org/abs/2106.09685
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        rank: int,
        scaling: float,
        bias: bool = False,
    ):
        super().__init__()

        self.in_features = in_features
        self.out_features = out_features
        assert not bias
        self.bias = bias
        self.rank = rank
        self.scaling = scaling

        self.lora_A = nn.Linear(
            self.in_features,
            self.rank,
            bias=self.bias,
        )
        self.lora_B = nn.Linear(
            self.rank,
            self.out_features,
            bias=self.bias,
        )

        self.linear = nn.Linear(self.in_features, self.out_features, bias=self.bias)

        # make sure no LoRA weights are marked as "missing" in load_state_dict
        def ignore_missing_keys(m: nn.Module, incompatible_keys: NamedTuple) -> None:
            incompatible_keys.missing_keys[:] = []  # type: ignore

        self.register_load_state_dict_post_hook(ignore_missing_keys)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lora = self.lora_B(self.lora_A(x))
        result: torch.Tensor = self.linear(x) + lora * self.scaling
        return result


def maybe_lora(
    lora_args: Optional[LoraArgs],
) -> Union[Type[nn.Linear], partial[LoRALinear]]:
    if lora_args is None:
        return nn.Linear
    else:
        return partial(LoRALinear, rank=lora_args.rank, scaling=lora_args.scaling)


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden_dim: int, lora: Optional[LoraArgs] = None):
        super().__init__()

        MaybeLora = maybe_lora(lora)
        self.w1 = MaybeLora(dim, hidden_dim, bias=False)
        self.w2 = MaybeLora(hidden_dim, dim, bias=False)
        self.w3 = MaybeLora(dim, hidden_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))  # type: ignore


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


class MoeLayer(nn.Module):
    def __init__(self, experts: List[nn.Module], gate: nn.Module, moe_args: MoeArgs):
        super().__init__()
        assert len(experts) > 0
        self.experts = nn.ModuleList(experts)
        self.gate = gate
        self.args = moe_args

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        gate_logits = self.gate(inputs)
        weights, selected_experts = torch.topk(gate_logits, self.args.num_experts_per_tok)
        weights = F.softmax(weights, dim=1, dtype=torch.float).to(inputs.dtype)
        results = torch.zeros_like(inputs)
        for i, expert in enumerate(self.experts):
            batch_idx, nth_expert = torch.where(selected_experts == i)
            results[batch_idx] += weights[batch_idx, nth_expert, None] * expert(inputs[batch_idx])
        return results


class FeedForwardHalf(nn.Module):
    """The feed-forward half of TransformerBlock (the attention half needs xformers)."""

    def __init__(
        self,
        dim: int,
        hidden_dim: int,
        norm_eps: float,
        lora: Optional[LoraArgs] = None,
        moe: Optional[MoeArgs] = None,
    ):
        super().__init__()
        self.ffn_norm = RMSNorm(dim, eps=norm_eps)

        self.feed_forward: nn.Module
        if moe is not None:
            self.feed_forward = MoeLayer(
                experts=[FeedForward(dim=dim, hidden_dim=hidden_dim, lora=lora) for _ in range(moe.num_experts)],
                gate=nn.Linear(dim, moe.num_experts, bias=False),
                moe_args=moe,
            )
        else:
            self.feed_forward = FeedForward(dim=dim, hidden_dim=hidden_dim, lora=lora)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        r = self.feed_forward.forward(self.ffn_norm(h))
        out = h + r
        return out


def build_block():
    return FeedForwardHalf(
        dim=8, hidden_dim=16, norm_eps=1e-5, lora=LoraArgs(rank=2, scaling=2.0), moe=MoeArgs(num_experts=4, num_experts_per_tok=2)
    )


compiled_block = torch.compile(build_block(), dynamic=True)


def make():
    torch.manual_seed(0)
    return build_block(), [(torch.randn(6, 8),)]
