"""Latent Diffusion's LitEma: the EMA step branches on its own `num_updates` buffer (`if self.num_updates >= 0:`), increments it in place and takes `min(self.decay, (1 + n) / (10 + n))` of two tensors before updating the shadow buffers.

Source: CompVis/stable-diffusion@21f890f9da3cfbeaba8e2ac3c425ee9e998d5229:ldm/modules/ema.py:1-76
Also: ldm/models/diffusion/ddpm.py:85-95,172-185,366-368 (DDPM builds LitEma(self.model)
when use_ema, prints the buffer count, swaps weights in ema_scope, and calls
self.model_ema(self.model) in on_train_batch_end).
Kept: LitEma verbatim (decay/num_updates buffers, the name mangling into
buffers, forward, copy_to, store, restore); DDPM's EMA plumbing around it.
Simplified: the diffusion model is a small conv stack (one frozen parameter
to take the `requires_grad` else-branch); no Lightning; the EMA step is
compiled on its own, the way it runs after each optimizer step.
"""
from contextlib import contextmanager

import torch
from torch import nn


class LitEma(nn.Module):
    def __init__(self, model, decay=0.9999, use_num_upates=True):
        super().__init__()
        if decay < 0.0 or decay > 1.0:
            raise ValueError('Decay must be between 0 and 1')

        self.m_name2s_name = {}
        self.register_buffer('decay', torch.tensor(decay, dtype=torch.float32))
        self.register_buffer('num_updates', torch.tensor(0,dtype=torch.int) if use_num_upates
                             else torch.tensor(-1,dtype=torch.int))

        for name, p in model.named_parameters():
            if p.requires_grad:
                #remove as '.'-character is not allowed in buffers
                s_name = name.replace('.','')
                self.m_name2s_name.update({name:s_name})
                self.register_buffer(s_name,p.clone().detach().data)

        self.collected_params = []

    def forward(self,model):
        decay = self.decay

        if self.num_updates >= 0:
            self.num_updates += 1
            decay = min(self.decay,(1 + self.num_updates) / (10 + self.num_updates))

        one_minus_decay = 1.0 - decay

        with torch.no_grad():
            m_param = dict(model.named_parameters())
            shadow_params = dict(self.named_buffers())

            for key in m_param:
                if m_param[key].requires_grad:
                    sname = self.m_name2s_name[key]
                    shadow_params[sname] = shadow_params[sname].type_as(m_param[key])
                    shadow_params[sname].sub_(one_minus_decay * (shadow_params[sname] - m_param[key]))
                else:
                    assert not key in self.m_name2s_name

    def copy_to(self, model):
        m_param = dict(model.named_parameters())
        shadow_params = dict(self.named_buffers())
        for key in m_param:
            if m_param[key].requires_grad:
                m_param[key].data.copy_(shadow_params[self.m_name2s_name[key]].data)
            else:
                assert not key in self.m_name2s_name

    def store(self, parameters):
        self.collected_params = [param.clone() for param in parameters]

    def restore(self, parameters):
        for c_param, param in zip(self.collected_params, parameters):
            param.data.copy_(c_param.data)


class DiffusionWrapper(nn.Module):
    def __init__(self, channels=3):
        super().__init__()
        self.diffusion_model = nn.Sequential(
            nn.Conv2d(channels, 4, 3, padding=1), nn.SiLU(), nn.Conv2d(4, channels, 3, padding=1))
        self.norm = nn.GroupNorm(1, channels)
        self.norm.weight.requires_grad_(False)

    def forward(self, x):
        return self.diffusion_model(self.norm(x))


class DDPM(nn.Module):
    def __init__(self, use_ema=True):
        super().__init__()
        self.model = DiffusionWrapper()
        self.use_ema = use_ema
        if self.use_ema:
            self.model_ema = LitEma(self.model)
            print(f"Keeping EMAs of {len(list(self.model_ema.buffers()))}.")

    @contextmanager
    def ema_scope(self, context=None):
        if self.use_ema:
            self.model_ema.store(self.model.parameters())
            self.model_ema.copy_to(self.model)
            if context is not None:
                print(f"{context}: Switched to EMA weights")
        try:
            yield None
        finally:
            if self.use_ema:
                self.model_ema.restore(self.model.parameters())
                if context is not None:
                    print(f"{context}: Restored training weights")

    def on_train_batch_end(self, *args, **kwargs):
        if self.use_ema:
            self.model_ema(self.model)


ddpm = DDPM()
ddpm.model_ema = torch.compile(ddpm.model_ema)


def make():
    torch.manual_seed(0)
    ldm = DDPM()
    with torch.no_grad():
        for p in ldm.model.parameters():
            p.add_(0.1)
    return ldm.model_ema, [(ldm.model,), (ldm.model,)]
