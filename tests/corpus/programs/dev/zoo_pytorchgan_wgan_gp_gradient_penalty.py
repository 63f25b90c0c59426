"""PyTorch-GAN WGAN-GP: `compute_gradient_penalty` builds `alpha` from `np.random.random(size=real_samples.shape)` through the legacy `Tensor` constructor, wraps interpolates in `Variable(requires_grad=True)` and takes `autograd.grad` of the critic.

Source: eriklindernoren/PyTorch-GAN@0484f457a013118f12e38da7e16819a19bd3f074:implementations/wgan_gp/wgan_gp.py:38-128
Kept: the opt namespace fields used by the models, Generator/Discriminator MLPs,
weights_init_normal, the `Tensor = torch.FloatTensor` alias and compute_gradient_penalty.
Simplified: `grad_outputs=fake` (what later revisions of the file pass; this revision
names a loop variable `valid`); argparse replaced by a namespace; latent 8, images 1x4x4.
"""
import numpy as np
import torch
import torch.autograd as autograd
import torch.nn as nn
from torch.autograd import Variable


class opt:
    latent_dim = 8
    img_size = 4
    channels = 1


cuda = True if torch.cuda.is_available() else False


def weights_init_normal(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()

        self.model = nn.Sequential(
            nn.Linear(opt.latent_dim, 16),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(16, 32),
            nn.BatchNorm1d(32),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(32, opt.img_size**2),
            nn.Tanh()
        )

    def forward(self, noise):
        img = self.model(noise)
        img = img.view(img.shape[0], opt.channels, opt.img_size, opt.img_size)
        return img


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()

        self.model = nn.Sequential(
            nn.Linear(opt.img_size**2, 16),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(16, 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(8, 1)
        )

    def forward(self, img):
        img_flat = img.view(img.shape[0], -1)
        validity = self.model(img_flat)

        return validity


# Loss weight for gradient penalty
lambda_gp = 10

Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor


def compute_gradient_penalty(D, real_samples, fake_samples):
    """Calculates the gradient penalty loss for WGAN GP"""
    # Random weight term for interpolation between real and fake samples
    alpha = Tensor(np.random.random(size=real_samples.shape))

    # Get random interpolation between real and fake samples
    interpolates = alpha * real_samples + ((1 - alpha) * fake_samples)

    interpolates = Variable(interpolates, requires_grad=True)

    d_interpolates = D(interpolates)

    fake = Variable(Tensor(real_samples.shape[0], 1).fill_(1.0), requires_grad=False)

    # Get gradient w.r.t. w.r.t. interpolates
    gradients = autograd.grad(outputs=d_interpolates, inputs=interpolates,
                              grad_outputs=fake, create_graph=True, retain_graph=True,
                              only_inputs=True)[0]

    gradient_penalty = lambda_gp * ((gradients.norm(2, dim=1) - 1) ** 2).mean()
    return gradient_penalty


gradient_penalty_fn = torch.compile(compute_gradient_penalty)


def make():
    torch.manual_seed(0)
    generator = Generator()
    discriminator = Discriminator()
    generator.apply(weights_init_normal)
    discriminator.apply(weights_init_normal)
    real_imgs = torch.rand(3, opt.channels, opt.img_size, opt.img_size) * 2 - 1
    with torch.no_grad():
        fake_imgs = generator(torch.randn(3, opt.latent_dim))
    return compute_gradient_penalty, [(discriminator, real_imgs, fake_imgs)]
