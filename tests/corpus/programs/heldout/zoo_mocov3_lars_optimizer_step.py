"""MoCo v3 LARS optimizer: `step` walks the param groups, skips params without grads, scales matrices by a trust ratio built with nested `torch.where`, and lazily creates the momentum buffer in `self.state`.

Source: facebookresearch/moco-v3@2e39594e121e28667c09ed9aa007d5e3ee934d30:moco/optimizer.py:10-49
Kept: LARS verbatim (defaults dict, @torch.no_grad step, `'mu' not in
param_state`, nesterov flag).
Simplified: the ViT/ResNet being optimized is a small MLP with one unused
layer (grad None); lr/weight decay from the README's LARS recipe scaled down.
The step is compiled the way PyTorch's docs compile optimizer steps
(`torch.compile(opt.step)`).
"""
import torch
import torch.nn as nn


class LARS(torch.optim.Optimizer):
    """
    LARS optimizer, no rate scaling or weight decay for normalization layers and biases.
    """
    def __init__(self, params, lr=0, weight_decay=0, momentum=0.9, nesterov=False, trust_coefficient=0.001):
        defaults = dict(lr=lr, weight_decay=weight_decay,
                        momentum=momentum, nesterov=nesterov,
                        trust_coefficient=trust_coefficient)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g['params']:
                dp = p.grad

                if dp is None:
                    continue

                if p.ndim > 1: # if not normalization gamma/beta or bias
                    dp = dp.add(p, alpha=g['weight_decay'])
                    param_norm = torch.norm(p)
                    update_norm = torch.norm(dp)
                    one = torch.ones_like(param_norm)
                    q = torch.where(param_norm > 0.,
                                    torch.where(update_norm > 0,
                                    (g['trust_coefficient'] * param_norm / update_norm), one),
                                    one)
                    dp = dp.mul(q)

                param_state = self.state[p]
                if 'mu' not in param_state:
                    param_state['mu'] = torch.zeros_like(p)
                mu = param_state['mu']
                mu.mul_(g['momentum']).add_(dp)
                if g['nesterov']:
                    dp = dp.add(mu, alpha=g['momentum'])
                else:
                    dp = mu
                p.add_(dp, alpha=-g['lr'])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 4)
        self.unused = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def build_optimizer(model, init_lr=0.6, weight_decay=1e-6, momentum=0.9):
    optimizer = LARS(model.parameters(), init_lr,
                     weight_decay=weight_decay,
                     momentum=momentum)
    return optimizer


def train_setup():
    model = Net()
    optimizer = build_optimizer(model)
    opt_step = torch.compile(optimizer.step)
    return model, optimizer, opt_step


def make():
    torch.manual_seed(0)
    model = Net()
    optimizer = build_optimizer(model)
    loss = model(torch.randn(5, 6)).pow(2).mean()
    loss.backward()
    # first call creates the momentum buffers, the second reuses them
    return optimizer.step, [(), ()]
