"""RectifiedFlow get_rectified_flow_loss_fn: closure over the SDE, get_z0 noise, reflow schedule switch, get_model_fn toggling train().

Source: gnobitab/RectifiedFlow@main:ImageGeneration/losses.py:40-110 (sde_lib.py RectifiedFlow @13e3a30bdb, models/utils.py get_model_fn)
Kept: get_rectified_flow_loss_fn verbatim (reduce_op lambda, reflow_flag
batch unpacking, the reflow_t_schedule t0/t1/uniform/int switch, t_expand
repeat, get_model_fn(model, train=train) with its model.train()/model.eval()
calls, the reflow_loss switch, reduce then mean); RectifiedFlow.__init__
(prints at construction, copy.deepcopy of the target model for reflow) and
get_z0's init_type switch.
Simplified: the NCSN++ score model is a two-conv velocity net with a time
embedding; the lpips branches are kept but unused (no lpips package).
"""
import copy

import torch
from torch import nn


def get_model_fn(model, train=False):
    def model_fn(x, labels):
        if not train:
            model.eval()
            return model(x, labels)
        else:
            model.train()
            return model(x, labels)

    return model_fn


class RectifiedFlow():
    def __init__(self, init_type='gaussian', noise_scale=1.0, reflow_flag=False, reflow_t_schedule='uniform', reflow_loss='l2', target_model=None, use_ode_sampler='rk45', sigma_var=0.0, ode_tol=1e-5, sample_N=None):
        if sample_N is not None:
            self.sample_N = sample_N
            print('Number of sampling steps:', self.sample_N)
        self.init_type = init_type

        self.noise_scale = noise_scale
        self.use_ode_sampler = use_ode_sampler
        self.ode_tol = ode_tol
        self.sigma_t = lambda t: (1. - t) * sigma_var
        print('Init. Distribution Variance:', self.noise_scale)
        print('SDE Sampler Variance:', sigma_var)
        print('ODE Tolerence:', self.ode_tol)

        self.reflow_flag = reflow_flag
        if self.reflow_flag:
            self.reflow_t_schedule = reflow_t_schedule
            self.reflow_loss = reflow_loss
            if 'lpips' in reflow_loss:
                raise NotImplementedError("lpips is not available")

            self.target_model = copy.deepcopy(target_model)
            self.target_model.eval()
            for p in self.target_model.parameters():
                p.requires_grad = False

    @property
    def T(self):
        return 1

    def get_z0(self, batch, train=True):
        n, c, h, w = batch.shape

        if self.init_type == 'gaussian':
            cur_shape = (n, c, h, w)
            return torch.randn(cur_shape)*self.noise_scale
        else:
            raise NotImplementedError("INITIALIZATION TYPE NOT IMPLEMENTED")


def get_rectified_flow_loss_fn(sde, train, reduce_mean=True, eps=1e-3):
    reduce_op = torch.mean if reduce_mean else lambda *args, **kwargs: 0.5 * torch.sum(*args, **kwargs)

    def loss_fn(model, batch):
        if sde.reflow_flag:
            z0 = batch[0]
            data = batch[1]
            batch = data.detach().clone()

        else:
            z0 = sde.get_z0(batch).to(batch.device)

        if sde.reflow_flag:
            if sde.reflow_t_schedule == 't0':
                t = torch.zeros(batch.shape[0], device=batch.device) * (sde.T - eps) + eps
            elif sde.reflow_t_schedule == 't1':
                t = torch.ones(batch.shape[0], device=batch.device) * (sde.T - eps) + eps
            elif sde.reflow_t_schedule == 'uniform':
                t = torch.rand(batch.shape[0], device=batch.device) * (sde.T - eps) + eps
            elif type(sde.reflow_t_schedule) == int:
                t = torch.randint(0, sde.reflow_t_schedule, (batch.shape[0], ), device=batch.device) * (sde.T - eps) / sde.reflow_t_schedule + eps
            else:
                assert False, 'Not implemented'
        else:
            t = torch.rand(batch.shape[0], device=batch.device) * (sde.T - eps) + eps

        t_expand = t.view(-1, 1, 1, 1).repeat(1, batch.shape[1], batch.shape[2], batch.shape[3])
        perturbed_data = t_expand * batch + (1.-t_expand) * z0
        target = batch - z0

        model_fn = get_model_fn(model, train=train)
        score = model_fn(perturbed_data, t*999)

        if sde.reflow_flag:
            if sde.reflow_loss == 'l2':
                losses = torch.square(score - target)
            elif sde.reflow_loss == 'lpips':
                assert sde.reflow_t_schedule == 't0'
                losses = sde.lpips_model(z0 + score, batch)
            elif sde.reflow_loss == 'lpips+l2':
                assert sde.reflow_t_schedule == 't0'
                lpips_losses = sde.lpips_model(z0 + score, batch).view(batch.shape[0], 1)
                l2_losses = torch.square(score - target).view(batch.shape[0], -1).mean(dim=1, keepdim=True)
                losses = lpips_losses + l2_losses
            else:
                assert False, 'Not implemented'
        else:
            losses = torch.square(score - target)

        losses = reduce_op(losses.reshape(losses.shape[0], -1), dim=-1)

        loss = torch.mean(losses)
        return loss

    return loss_fn


class VelocityNet(nn.Module):
    def __init__(self, ch=3, hidden=8):
        super().__init__()
        self.temb = nn.Linear(1, hidden)
        self.conv_in = nn.Conv2d(ch, hidden, 3, padding=1)
        self.dropout = nn.Dropout(0.1)
        self.conv_out = nn.Conv2d(hidden, ch, 3, padding=1)

    def forward(self, x, labels):
        h = self.conv_in(x) + self.temb(labels[:, None] / 1000.)[:, :, None, None]
        return self.conv_out(self.dropout(torch.relu(h)))


def train():
    sde = RectifiedFlow(init_type='gaussian', noise_scale=1.0, use_ode_sampler='euler', sample_N=4)
    loss_fn = torch.compile(get_rectified_flow_loss_fn(sde, train=True, reduce_mean=False))
    return loss_fn


def make():
    torch.manual_seed(0)
    model = VelocityNet()
    sde = RectifiedFlow(init_type='gaussian', noise_scale=1.0, use_ode_sampler='euler', sample_N=4)
    loss_fn = get_rectified_flow_loss_fn(sde, train=True, reduce_mean=False)
    return loss_fn, [(model, torch.randn(2, 3, 4, 4))]
