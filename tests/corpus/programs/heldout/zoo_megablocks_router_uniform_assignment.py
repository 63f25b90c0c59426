"""MegaBlocks LearnedRouter: training-time jitter from `self.args.moe_jitter_eps`, router logits appended to the module-level `_ROUTER_LOGITS` list for the z-loss, `_top_k` via max or topk, p-norm weight normalisation, and the forward-only `_UniformExpertAssignment` autograd Function.

Source: databricks/megablocks@78eea65fda01e638af36ae38853bc51efb04a4b4:megablocks/layers/router.py:1-114
Also: megablocks/layers/arguments.py (Arguments dataclass, init_method partial),
megablocks/layers/common.py (dtype).
Kept: router.py verbatim (the z-loss list helpers and batched_router_zloss
included), Arguments' fields the router reads, common.dtype.
Simplified: Arguments drops __post_init__'s triton/grouped_gemm checks and
defaults to fp16=False and device "cpu"; hidden 8, 4 experts, top-2.
"""
import dataclasses
from functools import partial
from typing import Any, Callable, Optional, Union

import torch
import torch.distributed as dist

InitFn = Union[Callable[[torch.Tensor], None], partial[torch.Tensor]]


@dataclasses.dataclass
class Arguments:
    # Model arguments.
    hidden_size: int = 1024
    ffn_hidden_size: int = 4096

    # MoE arguments.
    moe_num_experts: int = 1
    moe_top_k: int = 1
    moe_capacity_factor: int = 1
    moe_normalize_expert_weights: Optional[Union[int, float]] = None
    moe_loss_weight: float = 0.1
    moe_jitter_eps: Optional[float] = None
    moe_lbl_in_fp32: bool = False

    # Parallelism arguments.
    moe_expert_model_parallelism: bool = False
    expert_parallel_group: Optional[dist.ProcessGroup] = None

    # Initialization arguments.
    fp16: bool = False
    bf16: bool = False
    device: Union[int, torch.device] = "cpu"
    init_method: InitFn = partial(torch.nn.init.normal_, mean=0.0, std=0.02)
    output_layer_init_method: InitFn = init_method

    # Benchmarking arguments.
    uniform_expert_assignment: bool = False

    # Router Z-loss arguments
    moe_zloss_weight: float = 0  # 1e-3 is a reasonable value
    moe_zloss_in_fp32: bool = False


class common:
    @staticmethod
    def dtype(args: Arguments):
        if args.fp16:
            return torch.float16
        elif args.bf16:
            return torch.bfloat16
        return None


_ROUTER_LOGITS = []


def _save_router_logits(logits: torch.Tensor, args: Arguments):
    if args.moe_zloss_weight == 0:
        return
    global _ROUTER_LOGITS
    _ROUTER_LOGITS.append(logits)


def clear_router_zloss():
    global _ROUTER_LOGITS
    _ROUTER_LOGITS.clear()


def batched_router_zloss(args: Arguments):
    global _ROUTER_LOGITS

    if args.moe_zloss_weight == 0:
        import warnings
        warnings.warn('Call to batched_router_zloss, but moe_zloss_weight=0')
        return 0

    logits_per_router = _ROUTER_LOGITS

    if args.moe_zloss_in_fp32:
        logits_per_router = [logits.float() for logits in logits_per_router]

    unscaled_zloss_per_router = torch.stack([
        torch.logsumexp(logits, dim=1).square().mean() for logits in logits_per_router
    ])

    return args.moe_zloss_weight * unscaled_zloss_per_router


# NOTE: To enable end-to-end benchmarking without convergence we
# support a flag to force the router to assign tokens uniformly
# across the experts. We do this with a custom autograd operation
# so that PyTorch still executes the full set of router operation.
class _UniformExpertAssignment(torch.autograd.Function):

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, num_experts: int):
        out = torch.arange(x.numel(), dtype=x.dtype, device=x.device)
        out = torch.remainder(out, num_experts)
        return out.view(x.shape)


_uniform_expert_assignment = _UniformExpertAssignment.apply


class LearnedRouter(torch.nn.Module):

    def __init__(self, args: Arguments):
        super().__init__()
        self.args = args

        # Learned router parameters.
        #
        # NOTE: This weight matrix is not parallelized with expert model
        # parallelism. Each device needs the entire router weight matrix
        # so that it can route its batch of data correctly.
        self.layer = torch.nn.Linear(
            args.hidden_size,
            args.moe_num_experts,
            bias=False,
            dtype=common.dtype(args),
            device=args.device,
        )
        args.init_method(self.layer.weight)

    def jitter(self, x: torch.Tensor):
        low: float = 1.0 - self.args.moe_jitter_eps
        high: float = 1.0 + self.args.moe_jitter_eps
        noise = torch.rand(x.size(), dtype=x.dtype, device=x.device)
        return low + noise * (high - low)

    def _top_k(self, scores: torch.Tensor):
        if self.args.moe_top_k == 1:
            return scores.max(dim=-1, keepdim=True)
        return torch.topk(scores, self.args.moe_top_k, dim=-1)

    def forward(self, x: torch.Tensor):
        if self.training and self.args.moe_jitter_eps is not None:
            x = x * self.jitter(x)

        logits = self.layer(x.view(-1, x.shape[-1]))
        _save_router_logits(logits, self.args)
        scores = logits.softmax(dim=-1)
        expert_weights, expert_indices = self._top_k(scores)
        if self.args.moe_normalize_expert_weights:
            expert_weights = expert_weights / torch.norm(
                expert_weights,
                p=self.args.moe_normalize_expert_weights,
                dim=-1,
                keepdim=True,
            )

        expert_indices = (
            _uniform_expert_assignment(
                expert_indices,
                self.args.moe_num_experts,
            ) if self.args.uniform_expert_assignment else expert_indices
        )
        return scores, expert_weights, expert_indices


ARGS = Arguments(
    hidden_size=8,
    ffn_hidden_size=16,
    moe_num_experts=4,
    moe_top_k=2,
    moe_normalize_expert_weights=1,
    moe_jitter_eps=0.01,
    uniform_expert_assignment=True,
    moe_zloss_weight=1e-3,
)


def train_step_router():
    router = LearnedRouter(ARGS)
    return torch.compile(router)


def make():
    torch.manual_seed(0)
    clear_router_zloss()
    return LearnedRouter(ARGS), [(torch.randn(2, 3, 8),), (torch.randn(1, 5, 8),)]
