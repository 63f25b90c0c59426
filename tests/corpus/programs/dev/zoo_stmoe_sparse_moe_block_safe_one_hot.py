"""ST-MoE sparse block: TopNGating's `safe_one_hot` sizes F.one_hot by `max(indexes.max() + 1 + 1, max_length)`, a tensor.

Source: lucidrains/st-moe-pytorch@d94e65d8a1f50eb5b41efa5317b0d1b17c9dbfad:st_moe_pytorch/st_moe_pytorch.py:42-99,101-156,157-336,338-548,550-630,632-675
Kept: exists/default/cast_tuple/cumsum_exclusive/gumbel_noise/safe_one_hot,
RMSNorm, GEGLU, Expert, Experts (non-distributed path, with
all_experts_to_cpu_besides and the empty-outs branch), TopNGating (thresholds
per mode, capacity, second-expert routing by probability, positions loop,
combine/dispatch tensors, balance and router z-loss in training), MoE and
SparseMoEBlock returning MixtureOfExpertsReturn.
Simplified: einops/einx calls written as the equivalent torch ops; colt5's
topk replaced by torch.topk with the same `.values`/`.indices` return; no
beartype; no distributed all-gather; dim 8, 4 experts.
"""
from collections import namedtuple
from functools import partial
from typing import Tuple, Union

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import einsum, nn
from torch.nn import Module, ModuleList

MIN_EXPERT_CAPACITY = 4

MixtureOfExpertsReturn = namedtuple('MixtureOfExpertsReturn', [
    'outputs',
    'total_aux_loss',
    'balance_loss',
    'router_z_loss'
])


def exists(val):
    return val is not None


def default(val, default):
    if exists(val):
        return val

    return default() if callable(default) else default


def cast_tuple(el, len = 1):
    return el if isinstance(el, tuple) else ((el,) * len)


def Sequential(*modules):
    return nn.Sequential(*filter(exists, modules))


def cumsum_exclusive(t, dim = -3):
    assert dim < 0
    num_pad_dims = -dim - 1
    pre_padding = (0, 0) * num_pad_dims
    return F.pad(t, (*pre_padding, 1, -1)).cumsum(dim = dim)


def log(t, eps = 1e-20):
    return torch.log(t.clamp(min = eps))


def gumbel_noise(t):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return -log(-log(noise))


# pytorch one hot throws an error if there are out of bound indices.
# tensorflow, in contrast, does not throw an error

def safe_one_hot(indexes, max_length):
    max_index = indexes.max() + 1
    one_hot_classes = max(max_index + 1, max_length)
    return F.one_hot(indexes, one_hot_classes)[..., :max_length]


def maybe_differentiable_topk(x, k, non_differentiable = True, fused = True):
    return torch.topk(x, k, dim = -1)


class RMSNorm(Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = dim ** 0.5
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.normalize(x, dim = -1) * self.gamma * self.scale


class GEGLU(Module):
    def __init__(self, dim, mult_bias = True):
        super().__init__()
        self.mult_bias = nn.Parameter(torch.ones(dim)) if mult_bias else 1.

    def forward(self, x):
        x, gate = x.chunk(2, dim = -1)
        return F.gelu(gate) * x * self.mult_bias


class Expert(Module):
    def __init__(self, dim, hidden_mult = 4, mult_bias = True, prenorm = False):
        super().__init__()
        dim_hidden = int(dim * hidden_mult * 2 / 3)

        self.net = Sequential(
            RMSNorm(dim) if prenorm else None,
            nn.Linear(dim, dim_hidden * 2),
            GEGLU(dim_hidden, mult_bias = mult_bias),
            nn.Linear(dim_hidden, dim)
        )

        self.apply(self.init_)

    def init_(self, module):
        if isinstance(module, nn.Linear):
            dim = module.weight.shape[0]
            std = dim ** -0.5

            module.weight.data.uniform_(-std, std)
            module.bias.data.uniform_(-std, std)

    def forward(self, x):
        return self.net(x)


class Experts(Module):
    def __init__(self, experts, is_distributed = None, allow_var_seq_len = False):
        super().__init__()
        self.num_experts = len(experts)
        self.experts = ModuleList(experts)

        self.is_distributed = is_distributed
        if not exists(self.is_distributed):
            self.is_distributed = dist.is_initialized() and dist.get_world_size() > 1

        self.allow_var_seq_len = allow_var_seq_len

        self.register_buffer('dummy', torch.ones(1), persistent = False)

    @property
    def device(self):
        return self.dummy.device

    def all_experts_to_cpu_besides(self, selection):
        if isinstance(selection, int):
            experts = [self.experts[selection]]
        if isinstance(selection, slice):
            experts = self.experts[selection]
        else:
            experts = selection

        experts_set = set(experts)

        for expert in self.experts:
            device = self.device if expert in experts_set else 'cpu'
            expert.to(device)

    def forward(self, x, is_distributed = None):
        is_distributed = default(is_distributed, self.is_distributed)
        shape, num_experts = x.shape, self.num_experts

        num_experts_per_rank = num_experts
        expert_slice = slice(0, num_experts)

        # b e n d -> e b n d
        x = x.transpose(0, 1)

        self.all_experts_to_cpu_besides(expert_slice)

        experts = self.experts[expert_slice]

        outs = []

        for expert, expert_input in zip(experts, x):
            out = expert(expert_input)
            outs.append(out)

        if len(outs) > 0:
            outs = torch.stack(outs)
        else:
            outs = torch.empty_like(x, requires_grad = self.training)

        outs = outs.transpose(0, 1)

        assert outs.shape == shape
        return outs


class TopNGating(Module):

    def __init__(
        self,
        dim,
        num_gates,
        eps = 1e-9,
        top_n = 2,
        threshold_train: Union[float, Tuple[float, ...]] = 0.2,
        threshold_eval: Union[float, Tuple[float, ...]] = 0.2,
        capacity_factor_train = 1.25,
        capacity_factor_eval = 2.,
        straight_through_dispatch_tensor = True,
        differentiable_topk = False,
        differentiable_topk_fused = True
    ):
        super().__init__()
        self.eps = eps
        self.num_gates = num_gates
        self.to_gates = nn.Linear(dim, num_gates, bias = False)

        self.differentiable_topk = differentiable_topk

        self.topk = partial(
            maybe_differentiable_topk,
            non_differentiable = not differentiable_topk,
            fused = differentiable_topk_fused
        )

        assert top_n >= 2, 'must be 2 or more experts'
        self.top_n = top_n
        top_n_minus_1 = top_n - 1

        threshold_train = cast_tuple(threshold_train, top_n_minus_1)
        threshold_eval = cast_tuple(threshold_eval, top_n_minus_1)

        assert len(threshold_train) == len(threshold_eval) == top_n_minus_1

        self.register_buffer('threshold_train', torch.tensor([eps, *threshold_train]))
        self.register_buffer('threshold_eval', torch.tensor([eps, *threshold_eval]))

        self.capacity_factor_train = capacity_factor_train
        self.capacity_factor_eval = capacity_factor_eval

        self.straight_through_dispatch_tensor = straight_through_dispatch_tensor
        self.register_buffer('zero', torch.zeros((1,)), persistent = False)

    def forward(self, x, noise_gates = False, noise_mult = 1.):
        *_, b, group_size, dim, dtype, top_n, num_gates, eps = *x.shape, x.dtype, self.top_n, self.num_gates, self.eps

        suffix = 'train' if self.training else 'eval'

        threshold = getattr(self, f'threshold_{suffix}')
        capacity_factor = getattr(self, f'capacity_factor_{suffix}')

        expert_capacity = min(group_size, int((group_size * capacity_factor) / num_gates))
        expert_capacity = max(expert_capacity, MIN_EXPERT_CAPACITY)
        expert_capacity_f = float(expert_capacity)

        gate_logits = self.to_gates(x)

        maybe_noised_gate_logits = gate_logits

        if noise_gates:
            noise = gumbel_noise(maybe_noised_gate_logits)
            maybe_noised_gate_logits = maybe_noised_gate_logits + noise * noise_mult

        raw_gates = maybe_noised_gate_logits.softmax(dim = -1)

        topk_return = self.topk(raw_gates, k = top_n)

        gate_indices = topk_return.indices

        if self.differentiable_topk:
            gates = topk_return.coor_descent_values
        else:
            gates = topk_return.values

        # '... k -> k ...'
        gates = gates.permute(2, 0, 1)
        gate_indices = gate_indices.permute(2, 0, 1)

        one_hot_gate_indices = F.one_hot(gate_indices, num_gates)
        mask = one_hot_gate_indices.float()

        mask_1 = mask[0]

        denom = gates.sum(dim = 0, keepdim = True).clamp(min = eps)
        gates = gates / denom

        probs = torch.zeros_like(gates).uniform_(0., 1.)

        should_route = probs < (gates / threshold.clamp(min = eps)[:, None, None])

        should_route[0, ...] = True

        mask *= should_route.float()[..., None]

        mask_cumsum = cumsum_exclusive(mask, dim = -2)

        positions = []
        prev_expert_count = 0.

        for n in range(self.top_n):
            position_in_expert = (mask_cumsum[n] + prev_expert_count) * mask[n]

            mask[n] *= (position_in_expert < expert_capacity_f).float()

            prev_expert_count = mask[n].sum(dim = -2, keepdim = True) + prev_expert_count

            position_in_expert = position_in_expert.sum(dim = -1)
            positions.append(position_in_expert)

        positions = torch.stack(positions)

        mask_flat = mask.sum(dim = -1)

        gates = gates * mask_flat

        combine_tensor = (
            (gates * mask_flat)[..., None, None]
            * one_hot_gate_indices[..., None]
            * safe_one_hot(positions.long(), expert_capacity)[..., None, :]
        )

        combine_tensor = combine_tensor.sum(dim = 0)

        dispatch_tensor = combine_tensor.bool().type(dtype)

        if self.straight_through_dispatch_tensor:
            dispatch_tensor = dispatch_tensor + combine_tensor - combine_tensor.detach()

        if self.training:
            density_1 = mask_1.mean(dim = -2)
            density_1_proxy = raw_gates.mean(dim = -2)

            balance_loss = (density_1_proxy * density_1).mean() * float(num_gates ** 2)
        else:
            balance_loss = self.zero

        if self.training:
            router_z_loss = torch.logsumexp(gate_logits, dim = -1)
            router_z_loss = torch.square(router_z_loss)
            router_z_loss = router_z_loss.mean()
        else:
            router_z_loss = self.zero

        return dispatch_tensor, combine_tensor, balance_loss, router_z_loss


class MoE(Module):

    def __init__(self,
        dim,
        num_experts = 16,
        expert_hidden_mult = 4,
        threshold_train = 0.2,
        threshold_eval = 0.2,
        capacity_factor_train = 1.25,
        capacity_factor_eval = 2.,
        gating_top_n = 2,
        balance_loss_coef = 1e-2,
        router_z_loss_coef = 1e-3,
        experts = None,
        straight_through_dispatch_tensor = True,
        differentiable_topk = False,
        differentiable_topk_fused = True,
        is_distributed = None,
        allow_var_seq_len = False
    ):
        super().__init__()
        self.dim = dim
        self.num_experts = num_experts

        self.gate = TopNGating(
            dim,
            top_n = gating_top_n,
            num_gates = num_experts,
            straight_through_dispatch_tensor = straight_through_dispatch_tensor,
            differentiable_topk = differentiable_topk,
            threshold_train = threshold_train,
            threshold_eval = threshold_eval,
            capacity_factor_train = capacity_factor_train,
            capacity_factor_eval = capacity_factor_eval
        )

        experts = default(experts, lambda: [Expert(dim = dim, hidden_mult = expert_hidden_mult) for _ in range(num_experts)])

        self.experts = Experts(
            experts,
            is_distributed = is_distributed,
            allow_var_seq_len = allow_var_seq_len
        )

        self.balance_loss_coef = balance_loss_coef
        self.router_z_loss_coef = router_z_loss_coef

    def forward(self, x, noise_gates = False, noise_mult = 1.):
        dispatch_tensor, combine_tensor, balance_loss, router_z_loss = self.gate(x, noise_gates = noise_gates, noise_mult = noise_mult)

        expert_inputs = einsum('b n d, b n e c -> b e c d', x, dispatch_tensor)

        expert_outputs = self.experts(expert_inputs)

        output = einsum('b e c d, b n e c -> b n d', expert_outputs, combine_tensor)

        weighted_balance_loss = balance_loss * self.balance_loss_coef
        weighted_router_z_loss = router_z_loss * self.router_z_loss_coef

        total_aux_loss = weighted_balance_loss + weighted_router_z_loss

        return MixtureOfExpertsReturn(output, total_aux_loss, balance_loss, router_z_loss)


class SparseMoEBlock(Module):

    def __init__(self, moe: MoE, *, add_ff_before = False, add_ff_after = True):
        super().__init__()
        dim = moe.dim

        self.moe = moe
        self.moe_prenorm = RMSNorm(dim)

        self.ff_before = Expert(dim, prenorm = True) if add_ff_before else None
        self.ff_after = Expert(dim, prenorm = True) if add_ff_after else None

    def forward(self, x, noise_gates = False, noise_mult = 1.):
        if exists(self.ff_before):
            x = self.ff_before(x) + x

        residual = x

        moe_out, total_aux_loss, balance_loss, router_z_loss = self.moe(self.moe_prenorm(x), noise_gates = noise_gates, noise_mult = noise_mult)

        x = moe_out + residual

        if exists(self.ff_after):
            x = self.ff_after(x) + x

        return MixtureOfExpertsReturn(x, total_aux_loss, balance_loss, router_z_loss)


def build_block():
    moe = MoE(dim = 8, num_experts = 4, gating_top_n = 2, threshold_train = 0.2, threshold_eval = 0.2)
    return SparseMoEBlock(moe, add_ff_before = True, add_ff_after = True)


block = torch.compile(build_block())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 8, 8)
    return build_block(), [(x,), (x, True, 0.5)]
