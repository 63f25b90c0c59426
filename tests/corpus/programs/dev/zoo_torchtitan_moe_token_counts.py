"""torchtitan DeepSeek-V3 MoE without grouped mm: `num_local_tokens_per_expert.tolist()` feeds `torch.split` and a per-expert loop; the router counts tokens with `torch.histc`.

Source: pytorch/torchtitan@0ca6ece83ef800f95f00baea4635fa2866c741de:torchtitan/models/deepseek_v3/model/moe.py:13-330
Kept: GroupedExperts (the for-loop path), TokenChoiceTopKRouter, MoE.__init__/forward
(expert_bias / tokens_per_expert buffers, the `.tolist()` branch, shared expert, scatter_add),
and the per-block `torch.compile(..., fullgraph=True)` of torchtitan's apply_compile.
Simplified: the router's histc input is cast with `.float()` and the counts back with
`.to(torch.int64)`, as later torchtitan versions do (CPU histc takes no integer input);
DeepSeekV3ModelArgs is a small dataclass; weights are initialised with normal_; no backward
hook (load_balance_coeff None).
"""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class DeepSeekV3ModelArgs:
    dim: int = 8
    moe_inter_dim: int = 16
    n_routed_experts: int = 4
    n_shared_experts: int = 1
    n_activated_experts: int = 2
    route_scale: float = 1.0
    score_func: str = "softmax"
    use_grouped_mm: bool = False
    load_balance_coeff: float | None = None


# Reference: torchtitan/experiments/llama4/model/
class GroupedExperts(nn.Module):
    def __init__(
        self,
        dim: int,
        hidden_dim: int,
        num_experts: int,
        use_grouped_mm: bool,
    ):
        super().__init__()
        self.num_experts = num_experts
        self.w1 = nn.Parameter(torch.empty(num_experts, dim, hidden_dim))
        self.w2 = nn.Parameter(torch.empty(num_experts, hidden_dim, dim))
        self.w3 = nn.Parameter(torch.empty(num_experts, dim, hidden_dim))
        self.use_grouped_mm = use_grouped_mm

    def forward(
        self,
        x: torch.Tensor,
        num_local_tokens_per_expert: torch.Tensor | list[int] | None = None,
    ) -> torch.Tensor:
        # TODO: keeping this for loop implementation for comparison
        #       and readability, will remove later
        if not self.use_grouped_mm:
            if num_local_tokens_per_expert is not None:
                # a tuple of tensors indexed by experts
                # each with shape (tokens_per_expert(varying), dim)
                x = torch.split(
                    x,
                    split_size_or_sections=num_local_tokens_per_expert,
                    dim=0,
                )
                out_experts_splits = []
                for expert_idx, x_expert in enumerate(x):
                    w1, w2, w3 = (
                        self.w1[expert_idx],
                        self.w2[expert_idx],
                        self.w3[expert_idx],
                    )
                    h = F.silu(torch.matmul(x_expert, w1))
                    h = h * torch.matmul(x_expert, w3)
                    h = torch.matmul(h, w2)
                    # h shape (tokens_per_expert(varying), dim)
                    out_experts_splits.append(h)
                out = torch.cat(out_experts_splits, dim=0)
            else:
                # x shape (num_experts, tokens_per_expert, dim)
                h = F.silu(torch.bmm(x, self.w1))
                h = h * torch.bmm(x, self.w3)
                # out shape (num_experts, tokens_per_expert, dim)
                out = torch.bmm(h, self.w2)

            return out

        raise NotImplementedError("torch._grouped_mm path is not part of this program")


class TokenChoiceTopKRouter(nn.Module):
    """This class implements token-choice routing. In token-choice top-K routing, each token is
        routed to top K experts based on the router scores.
    """

    def __init__(
        self,
        dim: int,
        num_experts: int,
        top_k: int,
        use_sigmoid: bool = False,
        route_sclaing_factor: float = 1.0,
    ):
        super().__init__()

        self.dim = dim
        self.num_experts = num_experts
        self.top_k = top_k
        self.use_sigmoid = use_sigmoid
        self.route_sclaing_factor = route_sclaing_factor
        self.gate = nn.Linear(self.dim, self.num_experts, bias=False)

    def forward(
        self, x: torch.Tensor, expert_bias: torch.Tensor = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # scores shape (bs*slen, num_experts)
        scores = self.gate(x)

        # By default, sigmoid or softmax is performed in float32 to avoid loss explosion
        if self.use_sigmoid:
            scores = torch.sigmoid(scores.to(torch.float32))
        else:
            scores = F.softmax(scores.to(torch.float32), dim=1)

        # top scores shape (bs*slen, top_k)
        # NOTE: The expert_bias is only used for routing. The gating value
        #       top_scores is still derived from the original scores.
        _, selected_experts_indices = torch.topk(
            scores + expert_bias, k=self.top_k, dim=1
        )
        top_scores = scores.gather(dim=1, index=selected_experts_indices)

        # group tokens together by expert indices from 0 to num_experts and pass that to experts forward
        num_local_tokens_per_expert = torch.histc(
            selected_experts_indices.view(-1).float(),
            bins=self.num_experts,
            min=0,
            max=self.num_experts,
        ).to(torch.int64)
        # token_indices_experts_sorted shape (bs*slen*top_k,)
        token_indices_experts_sorted = torch.argsort(
            selected_experts_indices.view(-1), stable=True
        )
        top_scores = top_scores.view(-1)[token_indices_experts_sorted]
        token_indices_experts_sorted = token_indices_experts_sorted // self.top_k

        top_scores = (
            top_scores * self.route_sclaing_factor
        )  # must multiply the scaling factor

        return top_scores, token_indices_experts_sorted, num_local_tokens_per_expert


class MoE(nn.Module):
    def __init__(self, model_args: DeepSeekV3ModelArgs):

        super().__init__()
        dim = model_args.dim

        num_experts = model_args.n_routed_experts
        hidden_dim = model_args.moe_inter_dim
        top_k = model_args.n_activated_experts
        route_scaling_factor = model_args.route_scale

        self.use_grouped_mm = model_args.use_grouped_mm
        self.experts = GroupedExperts(
            dim=dim,
            hidden_dim=hidden_dim,
            num_experts=num_experts,
            use_grouped_mm=self.use_grouped_mm,
        )
        self.router = TokenChoiceTopKRouter(
            dim=dim,
            num_experts=num_experts,
            top_k=top_k,
            use_sigmoid=model_args.score_func == "sigmoid",
            route_sclaing_factor=route_scaling_factor,
        )
        self.shared_expert = (
            GroupedExperts(
                dim=dim,
                hidden_dim=hidden_dim * model_args.n_shared_experts,
                num_experts=1,
                use_grouped_mm=self.use_grouped_mm,
            )
            if model_args.n_shared_experts > 0
            else None
        )

        # auxiliary-loss-free load balancing
        self.load_balance_coeff = model_args.load_balance_coeff
        self.register_buffer(
            "expert_bias",
            torch.zeros(num_experts, dtype=torch.float32),
            persistent=True,
        )
        self.register_buffer(
            "tokens_per_expert",
            torch.zeros(num_experts, dtype=torch.float32),
            persistent=True,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bs, slen, dim = x.shape

        # top_scores and selected_indices shape (bs*slen*top_k,)
        # num_local_tokens_per_expert shape (num_experts,)
        (
            top_scores,
            token_indices,
            num_local_tokens_per_expert,
        ) = self.router(x.reshape(bs * slen, dim), self.expert_bias)

        # will be used to update the expert bias for load balancing
        self.tokens_per_expert += num_local_tokens_per_expert

        # shape (bs*slen*top_k, dim)
        token_indices = token_indices.reshape(-1, 1).expand(-1, dim)

        # shape (bs*slen*top_k, dim)
        routed_input = torch.gather(
            x.view(-1, dim),
            dim=0,
            index=token_indices,
        )

        if self.use_grouped_mm:
            raise NotImplementedError("generate_permute_indices is not part of this program")
        else:
            # NOTE: this would incur a synchronization between device and host
            num_local_tokens_per_expert = num_local_tokens_per_expert.tolist()

        # shape (bs*slen*top_k, dim)
        routed_output = self.experts(routed_input, num_local_tokens_per_expert)
        routed_output = (routed_output.to(torch.float32) * top_scores.unsqueeze(-1)).to(
            x.dtype
        )

        # shared expert
        if self.shared_expert is not None:
            out = self.shared_expert(x.reshape(1, bs * slen, dim)).reshape(
                bs * slen, dim
            )
        else:
            out = torch.zeros_like(x.reshape(bs * slen, dim))

        out = out.scatter_add(dim=0, index=token_indices, src=routed_output)
        out = out.reshape(bs, slen, dim)
        return out


def build_moe(model_args: DeepSeekV3ModelArgs) -> MoE:
    moe = MoE(model_args)
    for p in moe.parameters():
        nn.init.normal_(p, std=0.5)
    return moe


def apply_compile(moe: nn.Module) -> nn.Module:
    return torch.compile(moe, fullgraph=True)


def make():
    torch.manual_seed(0)
    moe = build_moe(DeepSeekV3ModelArgs())
    return moe, [(torch.randn(2, 3, 8),), (torch.randn(1, 5, 8),)]
