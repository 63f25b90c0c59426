"""DCGAN-style train step: netD on `fake.detach()` then on `fake`, two `.backward()` calls, grad printing in between.

Source: pytorch/pytorch#91542 (https://github.com/pytorch/pytorch/issues/91542)
Kept: the reporter's `train(netD, netG, x)` as posted (D step on `fake.detach()`,
`outD_only.mean().backward()`, the list-comprehension print of `netG.named_parameters()`
grads, G step through `netD(fake)` and a second backward, second print) and the
`nn.Sequential(Linear(1, 1), ReLU(), Linear(1, 1))` generator.
Simplified: the stored excerpt of the issue cuts off inside `netD = nn.Sequential(nn.L...` and
before the compiled call, so netD is taken to mirror netG and the entry is
`torch.compile(train)` (the issue's "torch.compile ... GAN training setup").
"""
import torch
import torch.nn as nn


def train(netD, netG, x):
    # train netD
    fake = netG(x)
    outD_only = netD(fake.detach())
    outD_only.mean().backward()

    # confirm the backward call does not touch netG
    print(["{}, {}".format(name, p.grad) for name, p in netG.named_parameters()])

    # train netG
    outD_attached = netD(fake)
    outD_attached.mean().backward()

    # confirm netG now has valid gradients
    print(["{}, {}".format(name, p.grad) for name, p in netG.named_parameters()])


train_compiled = torch.compile(train)


def make():
    torch.manual_seed(0)
    netG = nn.Sequential(
        nn.Linear(1, 1),
        nn.ReLU(),
        nn.Linear(1, 1))

    netD = nn.Sequential(
        nn.Linear(1, 1),
        nn.ReLU(),
        nn.Linear(1, 1))
    x = torch.randn(4, 1)
    return train, [(netD, netG, x)]
