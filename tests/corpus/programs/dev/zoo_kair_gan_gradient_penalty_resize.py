"""KAIR WGAN-GP gradient penalty: `GradientPenaltyLoss` lazily resizes its registered `grad_outputs` buffer to the critic output's size (`resize_().fill_(1.0)`) and calls `torch.autograd.grad(create_graph=True)` on the critic output.

Source: cszn/KAIR@06a18ed5651fd17d761bcebd052ccfe0ce6bb17f:models/loss.py:128-147
Kept: GradientPenaltyLoss verbatim (buffer registered empty, moved with
`.to(device)`, get_grad_outputs size check, autograd.grad, per-sample norm).
Simplified: the critic is a two-conv discriminator; the interpolation
between real and fake images is built by the caller, as in a WGAN-GP D step;
1x3x8x8 images, batch 2 and 3 (the second size re-triggers the resize).
"""
import torch
import torch.nn as nn


class GradientPenaltyLoss(nn.Module):
    def __init__(self, device=torch.device('cpu')):
        super(GradientPenaltyLoss, self).__init__()
        self.register_buffer('grad_outputs', torch.Tensor())
        self.grad_outputs = self.grad_outputs.to(device)

    def get_grad_outputs(self, input):
        if self.grad_outputs.size() != input.size():
            self.grad_outputs.resize_(input.size()).fill_(1.0)
        return self.grad_outputs

    def forward(self, interp, interp_crit):
        grad_outputs = self.get_grad_outputs(interp_crit)
        grad_interp = torch.autograd.grad(outputs=interp_crit, inputs=interp, \
            grad_outputs=grad_outputs, create_graph=True, retain_graph=True, only_inputs=True)[0]
        grad_interp = grad_interp.view(grad_interp.size(0), -1)
        grad_interp_norm = grad_interp.norm(2, dim=1)

        loss = ((grad_interp_norm - 1)**2).mean()
        return loss


class Critic(nn.Module):
    def __init__(self, in_nc=3, nc=8):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_nc, nc, 3, 2, 1), nn.LeakyReLU(0.2, True),
            nn.Conv2d(nc, nc, 3, 2, 1), nn.LeakyReLU(0.2, True),
        )
        self.classifier = nn.Linear(nc * 2 * 2, 1)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(x.view(x.size(0), -1))


def define_losses(device=torch.device('cpu')):
    cri_gp = GradientPenaltyLoss(device=device).to(device)
    return torch.compile(cri_gp)


def _interp(netD, real, fake):
    alpha = torch.rand(real.size(0), 1, 1, 1)
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    interp_crit = netD(interp)
    return interp, interp_crit


def make():
    torch.manual_seed(0)
    netD = Critic()
    a = _interp(netD, torch.rand(2, 3, 8, 8), torch.rand(2, 3, 8, 8))
    b = _interp(netD, torch.rand(3, 3, 8, 8), torch.rand(3, 3, 8, 8))
    return GradientPenaltyLoss(), [a, b]
