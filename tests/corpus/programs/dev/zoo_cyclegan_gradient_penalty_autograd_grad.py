"""CycleGAN/pix2pix cal_gradient_penalty (WGAN-GP): `type` string selects real/fake/mixed interpolates, `requires_grad_` on the interpolate, torch.autograd.grad with create_graph through a PatchGAN discriminator; `lambda_gp > 0.0` guard returns `(0.0, None)`.

Source: junyanz/pytorch-CycleGAN-and-pix2pix@master:models/networks.py:GANLoss,cal_gradient_penalty,NLayerDiscriminator
Kept: cal_gradient_penalty verbatim (NotImplementedError for an unknown
type), NLayerDiscriminator with its functools.partial/InstanceNorm2d use_bias
test, the `device` argument plumbing; the penalty is compiled with
`torch.compile(cal_gradient_penalty)`.
Simplified: ndf 4, n_layers 2, 3x16x16 images, batch 2; GANLoss and the
generators are not part of the compiled function and are dropped.
"""
import functools

import torch
import torch.nn as nn


def cal_gradient_penalty(netD, real_data, fake_data, device, type='mixed', constant=1.0, lambda_gp=10.0):
    """Calculate the gradient penalty loss, used in WGAN-GP paper https://arxiv.org/abs/1704.00028

    Arguments:
        netD (network)              -- discriminator network
        real_data (tensor array)    -- real images
        fake_data (tensor array)    -- generated images from the generator
        device (str)                -- GPU / CPU
        type (str)                  -- if we mix real and fake data or not [real | fake | mixed].
        constant (float)            -- the constant used in formula ( | |gradient||_2 - constant)^2
        lambda_gp (float)           -- weight for this loss

    Returns the gradient penalty loss
    """
    if lambda_gp > 0.0:
        if type == 'real':   # either use real images, fake images, or a linear interpolation of two.
            interpolatesv = real_data
        elif type == 'fake':
            interpolatesv = fake_data
        elif type == 'mixed':
            alpha = torch.rand(real_data.shape[0], 1, device=device)
            alpha = alpha.expand(real_data.shape[0], real_data.nelement() // real_data.shape[0]).contiguous().view(*real_data.shape)
            interpolatesv = alpha * real_data + ((1 - alpha) * fake_data)
        else:
            raise NotImplementedError('{} not implemented'.format(type))
        interpolatesv.requires_grad_(True)
        disc_interpolates = netD(interpolatesv)
        gradients = torch.autograd.grad(outputs=disc_interpolates, inputs=interpolatesv,
                                        grad_outputs=torch.ones(disc_interpolates.size()).to(device),
                                        create_graph=True, retain_graph=True, only_inputs=True)
        gradients = gradients[0].view(real_data.size(0), -1)  # flat the data
        gradient_penalty = (((gradients + 1e-16).norm(2, dim=1) - constant) ** 2).mean() * lambda_gp        # added eps
        return gradient_penalty, gradients
    else:
        return 0.0, None


class NLayerDiscriminator(nn.Module):
    """Defines a PatchGAN discriminator"""

    def __init__(self, input_nc, ndf=64, n_layers=3, norm_layer=nn.BatchNorm2d):
        super(NLayerDiscriminator, self).__init__()
        if type(norm_layer) == functools.partial:  # no need to use bias as BatchNorm2d has affine parameters
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d

        kw = 4
        padw = 1
        sequence = [nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
        nf_mult = 1
        nf_mult_prev = 1
        for n in range(1, n_layers):  # gradually increase the number of filters
            nf_mult_prev = nf_mult
            nf_mult = min(2 ** n, 8)
            sequence += [
                nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2, padding=padw, bias=use_bias),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True)
            ]

        nf_mult_prev = nf_mult
        nf_mult = min(2 ** n_layers, 8)
        sequence += [
            nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=1, padding=padw, bias=use_bias),
            norm_layer(ndf * nf_mult),
            nn.LeakyReLU(0.2, True)
        ]

        sequence += [nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]  # output 1 channel prediction map
        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        """Standard forward."""
        return self.model(input)


gradient_penalty_fn = torch.compile(cal_gradient_penalty)

RAISING_INPUTS = {4: "NotImplementedError"}


def make():
    torch.manual_seed(0)
    norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
    netD = NLayerDiscriminator(3, ndf=4, n_layers=2, norm_layer=norm_layer)
    real = torch.randn(2, 3, 16, 16)
    fake = torch.randn(2, 3, 16, 16)
    device = torch.device('cpu')
    return cal_gradient_penalty, [
        (netD, real, fake, device),
        (netD, real.clone(), fake, device, 'real'),
        (netD, real, fake.clone(), device, 'fake', 1.0, 10.0),
        (netD, real, fake, device, 'mixed', 1.0, 0.0),
        (netD, real, fake, device, 'interp'),
    ]
