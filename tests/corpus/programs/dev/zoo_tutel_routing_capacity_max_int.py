"""Tutel's MoE routing: `extract_critical` turns top-k scores into one-hot masks and cumsum locations; with `capacity_factor <= 0` the capacity is `int(simple_all_reduce(locations2.max(), ...))`, and `get_world_rank` (a try/except around `dist.get_rank`) gates a `logging.info`.

Source: microsoft/tutel@82af7aad9fc3ec981395ba97e7242a480984a55e:tutel/impls/fast_dispatch.py:138-204
Also: tutel/impls/moe_layer.py:282-312 (the routing() closure), tutel/gates/top.py
(LinearTopKGate), tutel/impls/losses.py (_one_hot_with_dtype, gshard_loss),
tutel/jit_kernels/gating.py (fast_cumsum_sub_one's CPU fallback),
tutel/impls/communicate.py (get_world_size, get_world_rank, simple_all_reduce).
Kept: extract_critical and compute_sorted_location verbatim, the routing
closure with gate noise, the gshard loss lambda and the alignment rounding.
Simplified: the layer stops after routing (fast_encode/decode and the
experts need Tutel's custom kernels); model_dim 8, 4 experts, top-2.
"""
import logging

import torch
import torch.distributed as dist
import torch.nn.functional as F


def get_world_size(group=None):
    try:
        return dist.get_world_size(group)
    except:
        return 1


def get_world_rank(group=None):
    try:
        return dist.get_rank(group)
    except:
        return 0


def simple_all_reduce(input, group=None, op=torch.distributed.ReduceOp.SUM, inplace=False):
    world_size = get_world_size(group)
    if world_size == 1:
        return input
    output = input if inplace else torch.clone(input, memory_format=torch.contiguous_format)
    dist.all_reduce(output, op=op, group=group)
    return output


def torch_cumsum_sub_one(mask1):
    locations1 = torch.cumsum(mask1, dim=0) - 1
    return locations1


def fast_cumsum_sub_one(data, dim=0):
    if data.dim() != 2 or dim != 0:
        raise Exception("Unimplemented fast_cumsum_sub_one() of data = %s and dim = %s" % (data.size(), dim))
    return torch_cumsum_sub_one(data)


class losses:
    @staticmethod
    def _one_hot_with_dtype(data, num_classes, dtype, hot_value=1):
        result = torch.zeros([data.size(0), num_classes], device=data.device, dtype=dtype)
        result.scatter_(1, data.unsqueeze(-1), hot_value)
        return result

    @staticmethod
    def gshard_loss(scores_w_noise, top_ids):
        num_samples, num_global_experts = int(scores_w_noise.size(0)), int(scores_w_noise.size(1))
        mask = losses._one_hot_with_dtype(top_ids[:, 0], num_global_experts, dtype=scores_w_noise.dtype,
            hot_value=num_global_experts / num_samples)
        me = torch.sum(scores_w_noise, dim=0)
        ce = torch.sum(mask, dim=0)
        l_aux = torch.sum(me * ce) / num_samples
        return l_aux


def compute_sorted_location(x, importance_scores):
    sorted_x = x[importance_scores.argsort(dim=0)]
    sorted_cumsum = fast_cumsum_sub_one(sorted_x) * sorted_x
    return sorted_cumsum[importance_scores.argsort(dim=0).argsort(dim=0)]


def extract_critical(scores, top_k, loss_fn=losses.gshard_loss, capacity_factor=1.0, batch_prioritized_routing=False, normalize_gate=True, alignment=1, group=None, inequivalent_tokens=False):
    num_global_experts = int(scores.size(1))
    top_k, top_k_original = min(top_k, num_global_experts), top_k
    topk_indices = torch.topk(scores, top_k, dim=1).indices

    indices_s = [x.view(-1) for x in topk_indices.chunk(top_k, dim=1)]

    masks_se = [losses._one_hot_with_dtype(x, num_classes=num_global_experts, dtype=x.dtype) for x in indices_s]
    gates_s = [(scores * x).sum(dim=1) for x in masks_se]

    l_loss = loss_fn(scores, topk_indices) if loss_fn is not None else None

    if batch_prioritized_routing:
        importance_scores = -1 * scores.max(dim=1)[0]
        compute_location = lambda x: compute_sorted_location(x, importance_scores)
    else:
        compute_location = fast_cumsum_sub_one

    locations1 = compute_location(masks_se[0])

    locations_s = [torch.sum(locations1 * masks_se[0], dim=1).to(torch.int32)]

    if top_k > 1:
        acc_base = None
        for k in range(1, top_k):
            acc_base = torch.sum(masks_se[k - 1], dim=0, keepdim=True) if acc_base is None else acc_base + torch.sum(masks_se[k - 1], dim=0, keepdim=True)
            locations2 = compute_location(masks_se[k])
            locations2 += acc_base
            locations_s.append(torch.sum(locations2 * masks_se[k], dim=1).to(torch.int32))

        if normalize_gate:
            denom_s = torch.clamp(sum(gates_s), min=torch.finfo(gates_s[0].dtype).eps)
            gates_s = [x / denom_s for x in gates_s]
    else:
        locations2 = locations1
    locations2 = locations2[-1] + 1

    indices_s = [x.to(torch.int32) for x in indices_s]

    if inequivalent_tokens:
        num_samples = torch.tensor(scores.size(0), device=scores.device)
        num_samples = int(simple_all_reduce(num_samples, group=group, op=torch.distributed.ReduceOp.MAX))
    else:
        num_samples = int(scores.size(0))

    samples_per_expert = (num_samples + num_global_experts - 1) // num_global_experts
    if capacity_factor > 0:
        capacity = top_k * int(capacity_factor * samples_per_expert)
    else:
        capacity = locations2.max()
        capacity = int(simple_all_reduce(capacity, group=group, op=torch.distributed.ReduceOp.MAX))
        if capacity_factor < 0:
            capacity = min(capacity, top_k * int(-capacity_factor * samples_per_expert))

    remainder = capacity % alignment
    if remainder > 0:
        capacity = capacity + alignment - remainder

    if get_world_rank(group) == 0:
        logging.info(f"Capacity = {capacity}, real-time capacity-factor for top-{top_k_original} = {capacity / (top_k * samples_per_expert)}")

    return (num_global_experts, indices_s, locations_s, gates_s, capacity, locations2), l_loss


class LinearTopKGate(torch.nn.Module):
    def __init__(self, model_dim, num_global_experts, k=1, fp32_gate=False, **options):
        super().__init__()
        try:
            self.wg = torch.nn.Linear(model_dim, num_global_experts, bias=False, dtype=torch.float32 if fp32_gate else None)
        except:
            self.wg = torch.nn.Linear(model_dim, num_global_experts, bias=False)
        self.top_k = min(num_global_experts, int(k))
        self.fp32_gate = fp32_gate

        for opt in options:
            if opt not in ('capacity_factor', 'gate_noise'):
                raise Exception('Unrecognized argument provided to Gating module: %s' % opt)

    def forward(self, x):
        wg = self.wg.float() if self.fp32_gate else self.wg
        return wg(x.to(dtype=wg.weight.dtype))


class MoERouting(torch.nn.Module):
    """The routing half of tutel's MOELayer.forward, with its attributes."""

    def __init__(self, model_dim, num_global_experts, k=2, capacity_factor=1.0, gate_noise=0.0):
        super().__init__()
        self.num_global_experts = num_global_experts
        self.gates = torch.nn.ModuleList([LinearTopKGate(model_dim, num_global_experts, k=k)])
        self.gates[0].capacity_factor = capacity_factor
        self.gates[0].gate_noise = gate_noise
        self.top_k = k
        self.is_gshard_loss = True
        self.batch_prioritized_routing = True
        self.normalize_gate = True
        self.sharded_count = 1
        self.group = None

    def forward(self, x, gate_index=0, capacity_factor=None, top_k=None, a2a_ffn_overlap_degree=1, inequivalent_tokens=False, megablocks_size=0):
        gctx = self.gates[gate_index]
        top_k = top_k or gctx.top_k

        def routing():
            logits = gctx(x)

            if self.training and gctx.gate_noise > 0:
                logits_w_noise = logits + gctx.gate_noise * torch.randn_like(logits) / self.num_global_experts
            else:
                logits_w_noise = logits

            scores = F.softmax(logits_w_noise, dim=1)
            _loss_fn = lambda gates, topk_ids: losses.gshard_loss(gates, topk_ids)

            mega_up = max(megablocks_size, 1)
            alignment = (self.sharded_count * a2a_ffn_overlap_degree + mega_up - 1) // mega_up * mega_up
            if alignment > 256:
                alignment = (alignment + 127) // 128 * 128

            return logits.dtype, extract_critical(scores,
                top_k = top_k,
                loss_fn = _loss_fn,
                capacity_factor = capacity_factor or gctx.capacity_factor,
                batch_prioritized_routing = self.batch_prioritized_routing,
                normalize_gate = self.normalize_gate,
                group = self.group,
                alignment = alignment,
                inequivalent_tokens = inequivalent_tokens,
            )

        logits_dtype, (crit, l_aux) = routing()
        self.dispatch_count = crit[-1]
        return crit, l_aux


router = torch.compile(MoERouting(8, 4, k=2, gate_noise=0.1))


def make():
    torch.manual_seed(0)
    x = torch.randn(6, 8)
    return MoERouting(8, 4, k=2, gate_noise=0.1), [(x,), (x, 0, -1.0), (x, 0, -0.5, None, 3)]
