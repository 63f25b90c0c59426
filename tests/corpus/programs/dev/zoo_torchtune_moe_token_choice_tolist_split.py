"""torchtune MoE without grouped mm: the router's `torch.histc` token counts go through `num_tokens_per_expert.tolist()` into `torch.split`, one matmul chain per expert.

Source: pytorch/torchtune@bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1:torchtune/modules/moe/moe.py:14-170
Also: torchtune/modules/moe/experts.py:17-125 (GroupedExperts, _forward_no_grouped_mm,
the `@torch.inference_mode(mode=False)` forward), torchtune/modules/moe/utils.py
(should_use_grouped_mm, log_once), torchtune/training/_compile.py (compile_model
compiling each transformer layer).
Kept: TokenChoiceTopKRouter (sigmoid scores, topk, histc, stable argsort),
MoE.forward's gather/scale/scatter_add on the non-grouped path, GroupedExperts
with its grouped-mm switch, should_use_grouped_mm's capability check and
log_once at DEBUG.
Simplified: no capability probe (CPU has no SM90, so the loop path runs), no
LoRA experts; histc counts in float and casts back to the index dtype (CPU histc
has no integer kernel; on CUDA the counts are integers); a layer with an
RMSNorm around the MoE is what compile_model compiles; 4 experts, dim 8.
"""
import logging
import math
from functools import lru_cache
from typing import Callable, Optional

import torch
from torch import nn
from torch.nn import functional as F

_log: logging.Logger = logging.getLogger(__name__)

# Configuration of MoE
# use grouped_mm in MoE or for loop for experts computation.
use_grouped_mm = True


@lru_cache(None)
def log_once(logger: logging.Logger, msg: str, level: int = logging.INFO) -> None:
    logger.log(level, msg)


def has_cuda_capability(major: int, minor: int) -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (major, minor)


def should_use_grouped_mm():
    if use_grouped_mm and not has_cuda_capability(9, 0):
        log_once(
            _log,
            "Failed to use grouped mm, which is only supported on SM90 or later",
            level=logging.DEBUG,
        )
        return False
    return use_grouped_mm


class GroupedExperts(nn.Module):
    def __init__(self, *, dim: int, hidden_dim: int, num_experts: int = 1, activation: Callable = F.silu):
        super().__init__()
        self.dim = dim
        self.num_experts = num_experts
        self.gate_proj = nn.Parameter(torch.empty(num_experts, dim, hidden_dim))
        self.down_proj = nn.Parameter(torch.empty(num_experts, hidden_dim, dim))
        self.up_proj = nn.Parameter(torch.empty(num_experts, dim, hidden_dim))
        self.act_fn = activation
        self.use_grouped_mm = should_use_grouped_mm()

    def reset_parameters(self) -> None:
        # Default initialization used by torch.nn.Linear
        nn.init.kaiming_uniform_(self.gate_proj, a=math.sqrt(5))
        nn.init.kaiming_uniform_(self.down_proj, a=math.sqrt(5))
        if self.up_proj is not None:
            nn.init.kaiming_uniform_(self.up_proj, a=math.sqrt(5))

    def _forward_no_grouped_mm(self, x: torch.Tensor, num_tokens_per_expert: torch.Tensor) -> torch.Tensor:
        # a tuple of tensors indexed by experts
        # each with shape (tokens_per_expert(varying), dim)
        x = torch.split(
            x,
            split_size_or_sections=num_tokens_per_expert.tolist(),
            dim=0,
        )
        out_experts_splits = []
        for expert_idx, x_expert in enumerate(x):
            w1, w2, w3 = (
                self.gate_proj[expert_idx],
                self.down_proj[expert_idx],
                self.up_proj[expert_idx],
            )
            h = self.act_fn(torch.matmul(x_expert, w1))
            h = h * torch.matmul(x_expert, w3)
            h = torch.matmul(h, w2)
            # h shape (tokens_per_expert(varying), dim)
            out_experts_splits.append(h)
        out = torch.cat(out_experts_splits, dim=0)
        return out

    # TODO: force no inference mode as a hack to get around
    # "Cannot set version_counter for inference tensor"
    @torch.inference_mode(mode=False)
    def forward(self, x: torch.Tensor, num_tokens_per_expert: torch.Tensor) -> torch.Tensor:
        if not self.use_grouped_mm:
            return self._forward_no_grouped_mm(x, num_tokens_per_expert)

        offsets = torch.cumsum(num_tokens_per_expert, dim=0, dtype=torch.int32)
        assert x.dim() == 2
        w1, w2, w3 = (self.gate_proj, self.down_proj, self.up_proj)
        h = self.act_fn(torch._grouped_mm(x, w1, offs=offsets))
        h = h * torch._grouped_mm(x, w3, offs=offsets)
        out = torch._grouped_mm(h, w2, offs=offsets)
        return out


class TokenChoiceTopKRouter(nn.Module):
    def __init__(self, *, gate: nn.Module, dim: int, num_experts: int, experts_per_token: int):
        super().__init__()
        self.gate = gate
        self.dim = dim
        self.num_experts = num_experts
        self.experts_per_token = experts_per_token

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # scores shape (bs*slen, num_experts)
        scores = self.gate(x)

        # By default, sigmoid is performed in float32 to avoid loss explosion
        scores = torch.sigmoid(scores.to(torch.float32)).to(x.dtype)

        # top scores shape (bs*slen, top_k)
        top_scores, selected_experts_indices = torch.topk(scores, k=self.experts_per_token, dim=1)
        self.selected_experts_indices = selected_experts_indices

        # CPU histc has no integer kernel: count in float, keep CUDA's integer dtype
        num_tokens_per_expert = torch.histc(
            selected_experts_indices.view(-1).float(),
            bins=self.num_experts,
            min=0,
            max=self.num_experts,
        ).to(selected_experts_indices.dtype)
        # token_indices_experts_sorted shape (bs*slen*top_k,)
        token_indices_experts_sorted = torch.argsort(selected_experts_indices.view(-1), stable=True)
        top_scores = top_scores.view(-1)[token_indices_experts_sorted]
        token_indices_experts_sorted = token_indices_experts_sorted // self.experts_per_token

        return top_scores, token_indices_experts_sorted, num_tokens_per_expert


class MoE(nn.Module):
    def __init__(self, *, experts: nn.Module, router: nn.Module, shared_expert: Optional[nn.Module] = None):
        super().__init__()
        self.experts = experts
        self.router = router
        self.shared_expert = shared_expert
        self.use_grouped_mm = should_use_grouped_mm()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bs, slen, dim = x.shape
        # top_scores and selected_indices shape (bs*slen*experts_per_token,)
        # num_tokens_per_expert shape (num_experts,)
        (
            top_scores,
            token_indices,
            num_tokens_per_expert,
        ) = self.router(x.reshape(bs * slen, dim))

        # shape (bs*slen*experts_per_token, dim)
        token_indices = token_indices.reshape(-1, 1).expand(-1, dim)

        # shape (bs*slen*experts_per_token, dim)
        routed_input = torch.gather(x.view(-1, dim), dim=0, index=token_indices)
        routed_input = routed_input * top_scores.reshape(-1, 1)

        # shape (bs*slen*top_k, dim)
        routed_output = self.experts(routed_input, num_tokens_per_expert)

        # shared expert
        if self.shared_expert is not None:
            out = self.shared_expert(x).reshape(bs * slen, dim)
        else:
            out = torch.zeros_like(x.reshape(bs * slen, dim))

        out = out.scatter_add(dim=0, index=token_indices, src=routed_output)
        out = out.reshape(bs, slen, dim)
        return out


class MoELayer(nn.Module):
    """The feed-forward half of a TransformerSelfAttentionLayer with an MoE mlp."""

    def __init__(self, dim=8, num_experts=4, experts_per_token=2, shared=False):
        super().__init__()
        experts = GroupedExperts(dim=dim, hidden_dim=2 * dim, num_experts=num_experts)
        experts.reset_parameters()
        router = TokenChoiceTopKRouter(
            gate=nn.Linear(dim, num_experts, bias=False), dim=dim, num_experts=num_experts,
            experts_per_token=experts_per_token,
        )
        shared_expert = nn.Sequential(nn.Linear(dim, dim), nn.SiLU()) if shared else None
        self.mlp_norm = nn.RMSNorm(dim)
        self.mlp = MoE(experts=experts, router=router, shared_expert=shared_expert)

    def forward(self, h):
        return h + self.mlp(self.mlp_norm(h))


def compile_model(model: nn.Module, backend: str = "inductor") -> None:
    for m in reversed(list(model.modules())):
        if isinstance(m, MoELayer):
            m.compile(backend=backend)


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    return MoELayer(), [(x,), (x[:1, :2] * 2,)]
