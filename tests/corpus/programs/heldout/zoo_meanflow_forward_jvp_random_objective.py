"""rectified-flow-pytorch MeanFlow.forward: Python random() picks the objective, torch.func.jvp through the model, data_shape stored on self.

Source: lucidrains/rectified-flow-pytorch@052b9650a0:rectified_flow_pytorch/mean_flow.py:1-225
Kept: the helpers (exists/xnor/default/identity/append_dims), MeanFlow.__init__
and forward() verbatim: xnor(accept_cond, exists(cond)) assert,
`self.data_shape = default(self.data_shape, shape[1:])`, the
`prob_time_end_start_same < random()` objective choice, lerp noising,
cond_forward closure, `jvp(self.model, inputs, tangents)` vs plain call with
`tensor(0.)`, adaptive loss weight, optional recon loss and loss breakdown.
Simplified: einops.reduce('b ... -> b', 'mean') is a local stand-in; the
model is a small MLP on (noised, times, delta_times, cond); data is 2x4;
prob_default_flow_obj 0.9 so the seeded random() takes the jvp objective.
"""
from random import random
from contextlib import nullcontext

import torch
from torch import nn, tensor, ones, zeros
from torch.nn import Module
import torch.nn.functional as F
from torch.func import jvp


def reduce(t, pattern, reduction):
    assert pattern == 'b ... -> b' and reduction == 'mean'
    return t.reshape(t.shape[0], -1).mean(dim=-1)


def exists(v):
    return v is not None


def xnor(x, y):
    return not (x ^ y)


def default(v, d):
    return v if exists(v) else d


def identity(t):
    return t


def append_dims(t, dims):
    shape = t.shape
    ones = ((1,) * dims)
    return t.reshape(*shape, *ones)


class MeanFlow(Module):
    def __init__(
        self,
        model: Module,
        data_shape = None,
        normalize_data_fn = identity,
        unnormalize_data_fn = identity,
        use_adaptive_loss_weight = True,
        adaptive_loss_weight_p = 0.5,
        prob_default_flow_obj = 0.5,
        add_recon_loss = False,
        recon_loss_weight = 1.,
        accept_cond = False,
        noise_std_dev = 1.,
        eps = 1e-3
    ):
        super().__init__()
        self.model = model
        self.data_shape = data_shape

        self.use_adaptive_loss_weight = use_adaptive_loss_weight
        self.adaptive_loss_weight_p = adaptive_loss_weight_p
        self.eps = eps

        self.normalize_data_fn = normalize_data_fn
        self.unnormalize_data_fn = unnormalize_data_fn

        assert 0. <= prob_default_flow_obj <= 1.
        self.prob_default_flow_obj = prob_default_flow_obj

        self.add_recon_loss = add_recon_loss and recon_loss_weight > 0
        self.recon_loss_weight = recon_loss_weight

        self.accept_cond = accept_cond

        self.noise_std_dev = noise_std_dev

    def forward(
        self,
        data,
        return_loss_breakdown = False,
        cond = None,
        noise = None
    ):
        assert xnor(self.accept_cond, exists(cond))

        data = self.normalize_data_fn(data)

        shape, ndim = data.shape, data.ndim

        prob_time_end_start_same = self.prob_default_flow_obj

        self.data_shape = default(self.data_shape, shape[1:])
        batch, device = shape[0], data.device

        times = torch.rand(batch, device = device)

        normal_flow_match_obj = prob_time_end_start_same > 0. and prob_time_end_start_same < random()

        if normal_flow_match_obj:
            integral_start_times = times
        else:
            integral_start_times = torch.rand(batch, device = device) * times

        if not exists(noise):
            noise = torch.randn_like(data) * self.noise_std_dev

        flow = noise - data

        padded_times = append_dims(times, ndim - 1)
        noised_data = data.lerp(noise, padded_times)

        delta_times = times - integral_start_times
        padded_delta_times = append_dims(delta_times, ndim - 1)

        inputs = (noised_data, times, delta_times)
        tangents = (flow, ones(batch, device = device), ones(batch, device = device))

        def cond_forward(cond):
            def inner(*inputs):
                return self.model(*inputs, cond)
            return inner

        if normal_flow_match_obj:
            if self.accept_cond:
                inputs = (*inputs, cond)

            pred, rate_avg_vel_change = (
                self.model(*inputs),
                tensor(0., device = device)
            )
        else:
            pred, rate_avg_vel_change = jvp(
                self.model if not self.accept_cond else cond_forward(cond),
                inputs,
                tangents
            )

        integral = padded_delta_times * rate_avg_vel_change.detach()

        target = flow - integral

        flow_loss = F.mse_loss(pred, target, reduction = 'none')

        if self.use_adaptive_loss_weight:
            flow_loss = reduce(flow_loss, 'b ... -> b', 'mean')

            p = self.adaptive_loss_weight_p
            loss_weight = 1. / (flow_loss + self.eps).pow(p)

            flow_loss = flow_loss * loss_weight.detach()

        flow_loss = flow_loss.mean()

        if not self.add_recon_loss:
            if not return_loss_breakdown:
                return flow_loss

            return flow_loss, (flow_loss,)

        pred_data = noised_data - (pred + integral) * padded_times
        recon_loss = F.mse_loss(pred_data, data)

        total_loss = (
            flow_loss +
            recon_loss * self.recon_loss_weight
        )

        if not return_loss_breakdown:
            return total_loss

        loss_breakdown = (flow_loss, recon_loss)

        return total_loss, loss_breakdown


class MLP(Module):
    def __init__(self, dim=4, cond_dim=3, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 2 + cond_dim, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, noised, times, delta_times, cond):
        h = torch.cat((noised, times[:, None], delta_times[:, None], cond), dim=-1)
        return self.net(h)


def train():
    mean_flow = MeanFlow(MLP(), prob_default_flow_obj=0.9, add_recon_loss=True, accept_cond=True)
    return torch.compile(mean_flow)


def make():
    torch.manual_seed(0)
    mean_flow = MeanFlow(MLP(), prob_default_flow_obj=0.9, add_recon_loss=True, accept_cond=True)
    data = torch.randn(2, 4)
    cond = torch.randn(2, 3)
    return mean_flow, [(data, False, cond), (data, True, cond)]
