"""Conv autoencoder compiled alone; a latent-gradient loss (`autograd.grad(create_graph=True)`) runs outside.

Source: pytorch/pytorch#132929 (https://github.com/pytorch/pytorch/issues/132929)
Kept: the reporter's `network` (1x1 conv down to 4 channels, 1x1 conv back up,
returning `(dec, z)`), the `loss_function` class whose `loss(latents, targets)`
takes `torch.autograd.grad(outputs=[targets.sum()], inputs=[latents],
create_graph=True)[0]`, prints it and returns its mean, the `run()` step
(`loss_two = output.mean() + loss; loss_two.backward()`), and the reported
entry: `compiled = torch.compile(model); model = compiled; run()` (only the
network is compiled; the reported symptom is the gradient call failing on the
compiled outputs).
Simplified: images 4x3x256x256 -> 2x3x8x8; the print in the loss is kept.
"""
from torch import nn
import torch


class loss_function():

    def __init__(self):
        pass

    def loss(self, latents, targets):

        grads = torch.autograd.grad(outputs=[(targets).sum()], inputs=[latents],
                create_graph=True)[0]

        print(grads.shape)
        return grads.mean()


class network(nn.Module):
    def __init__(self):
        super().__init__()

        self.down = torch.nn.Conv2d(3, 4, 1, 1)
        self.up = torch.nn.Conv2d(4, 3, 1, 1)

    def forward(self, x):
        z = self.down(x)
        dec = self.up(z)
        return dec, z


device = "cpu"


def run(model, criterion):
    data = torch.randn(2, 3, 8, 8).to(device)
    output, latents = model(data)
    loss = criterion.loss(latents=latents, targets=output)
    loss_two = output.mean() + loss
    loss_two.backward()


def main():
    model = network().to(device)
    criterion = loss_function()
    run(model, criterion)
    compiled = torch.compile(model)
    model = compiled
    run(model, criterion)


def make():
    torch.manual_seed(0)
    return network().to(device), [(torch.randn(2, 3, 8, 8),)]
