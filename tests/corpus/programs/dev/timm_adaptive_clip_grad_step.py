"""timm dispatch_clip_grad(mode='agc') in a compiled optimisation step: a Python loop over parameters with `p.grad is None`, unitwise norms, torch.where, copy_ (no break expected).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/utils/agc.py:21-42; timm/utils/clip_grad.py:6-22
Kept: unitwise_norm (ndim switch), adaptive_clip_grad verbatim, and
dispatch_clip_grad's mode switch ('norm' / 'value' / 'agc' / assert False),
called the way timm's train loop clips before optimizer.step().
Simplified: the step takes a model whose grads were produced eagerly; a
2-layer MLP; one frozen parameter (grad None).
"""
import torch
from torch import nn


def unitwise_norm(x, norm_type=2.0):
    if x.ndim <= 1:
        return x.norm(norm_type)
    else:
        return x.norm(norm_type, dim=tuple(range(1, x.ndim)), keepdim=True)


def adaptive_clip_grad(parameters, clip_factor=0.01, eps=1e-3, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    for p in parameters:
        if p.grad is None:
            continue
        p_data = p.detach()
        g_data = p.grad.detach()
        max_norm = unitwise_norm(p_data, norm_type=norm_type).clamp_(min=eps).mul_(clip_factor)
        grad_norm = unitwise_norm(g_data, norm_type=norm_type)
        clipped_grad = g_data * (max_norm / grad_norm.clamp(min=1e-6))
        new_grads = torch.where(grad_norm < max_norm, g_data, clipped_grad)
        p.grad.detach().copy_(new_grads)


def dispatch_clip_grad(parameters, value: float, mode: str = 'norm', norm_type: float = 2.0):
    if mode == 'norm':
        torch.nn.utils.clip_grad_norm_(parameters, value, norm_type=norm_type)
    elif mode == 'value':
        torch.nn.utils.clip_grad_value_(parameters, value)
    elif mode == 'agc':
        adaptive_clip_grad(parameters, value, norm_type=norm_type)
    else:
        assert False, f"Unknown clip mode ({mode})."


def clip_step(params, mode: str):
    dispatch_clip_grad(params, value=0.01, mode=mode)
    return [p.grad.clone() for p in params if p.grad is not None]


clip_step_compiled = torch.compile(clip_step)


def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    model[2].bias.requires_grad_(False)
    model(torch.randn(3, 4)).sum().backward()
    params = list(model.parameters())
    return clip_step, [(params, "agc"), (params, "value")]
